//! Markdown text (LLM messages and responses) as document lines: headings, lists, block
//! quotes, tables, emphasis, inline code and fenced code blocks with a small keyword
//! highlighter. Parsed by pulldown-cmark; drawn by the detail pane like any document, so
//! wrapping, scrolling and search work unchanged. Every piece of text is sanitized here.

use super::detail::{Line, Tok};
use crate::sanitize;
use pulldown_cmark::{Alignment, CodeBlockKind, Event, HeadingLevel, Options, Parser, Tag, TagEnd};

/// Text longer than this is shown as plain lines: Markdown of a megabyte is a log or a
/// file's contents, not prose, and laying it out would cost more than reading it.
pub const MAX_MARKDOWN: usize = 256 * 1024;

/// The lines of `text` rendered as Markdown, each starting with `indent`.
pub fn render(text: &str, indent: &str) -> Vec<Line> {
    if text.len() > MAX_MARKDOWN {
        return plain(text, indent);
    }
    let mut r = Renderer {
        indent: indent.to_string(),
        ..Default::default()
    };
    let opts = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    for ev in Parser::new_ext(text, opts) {
        r.event(ev);
    }
    r.flush();
    while r
        .out
        .last()
        .is_some_and(|l| l.spans.iter().all(|(_, s)| s.trim().is_empty()))
    {
        r.out.pop();
    }
    r.out
}

/// The lines of `text` as they are (the raw view of a message), each starting with `indent`.
pub fn plain(text: &str, indent: &str) -> Vec<Line> {
    text.trim_end_matches('\n')
        .split('\n')
        .map(|s| {
            let mut l = line(indent);
            l.spans
                .push((Tok::Text, sanitize::line(&detab(s.trim_end_matches('\r'))).into_owned()));
            l
        })
        .collect()
}

fn detab(s: &str) -> String {
    s.replace('\t', "    ")
}

fn line(indent: &str) -> Line {
    let mut l = Line::default();
    if !indent.is_empty() {
        l.spans.push((Tok::Text, indent.to_string()));
    }
    l.hang = unicode_width::UnicodeWidthStr::width(indent).min(u16::MAX as usize) as u16;
    l
}

#[derive(Default)]
struct Renderer {
    indent: String,
    out: Vec<Line>,
    /// The line being filled (None between blocks).
    cur: Option<Line>,
    /// Inline styles open (strong, emphasis, link, heading).
    styles: Vec<Tok>,
    /// Open lists: the next number of an ordered one.
    lists: Vec<Option<u64>>,
    quote: usize,
    /// Inside a fenced or indented code block: its language and text so far.
    code: Option<(String, String)>,
    /// Inside a table: its alignments, rows of cells, the cell being filled.
    table: Option<Table>,
    link: Vec<String>,
    /// A blank line goes before the next block.
    gap: bool,
}

#[derive(Default)]
struct Table {
    align: Vec<Alignment>,
    rows: Vec<Vec<Vec<(Tok, String)>>>,
    head_rows: usize,
    cell: Vec<(Tok, String)>,
    in_head: bool,
}

impl Renderer {
    /// The prefix of a new line: indent, quote bars, list indentation.
    fn prefix(&self) -> Line {
        let mut l = line(&self.indent);
        if self.quote > 0 {
            l.spans.push((Tok::Dim, "▎ ".repeat(self.quote)));
        }
        if !self.lists.is_empty() {
            l.spans.push((Tok::Text, "  ".repeat(self.lists.len())));
        }
        l.hang = l.width().min(u16::MAX as usize) as u16;
        l
    }

    fn start_block(&mut self) {
        self.flush();
        if self.gap && !self.out.is_empty() {
            let mut l = line(&self.indent);
            if self.quote > 0 {
                l.spans.push((Tok::Dim, "▎ ".repeat(self.quote)));
            }
            self.out.push(l);
        }
        self.gap = false;
    }

    fn flush(&mut self) {
        if let Some(l) = self.cur.take() {
            self.out.push(l);
        }
    }

    fn style(&self) -> Tok {
        self.styles.last().copied().unwrap_or(Tok::Text)
    }

    /// Inline text into the current line (or table cell).
    fn text(&mut self, tok: Tok, s: &str) {
        if let Some(t) = self.table.as_mut() {
            t.cell.push((tok, sanitize::line(s).into_owned()));
            return;
        }
        let mut first = true;
        for piece in s.split('\n') {
            if !first {
                self.flush();
            }
            first = false;
            if self.cur.is_none() {
                self.cur = Some(self.prefix());
            }
            if !piece.is_empty()
                && let Some(l) = self.cur.as_mut()
            {
                l.spans.push((tok, sanitize::line(&detab(piece)).into_owned()));
            }
        }
    }

    fn event(&mut self, ev: Event) {
        if let Some((_, buf)) = self.code.as_mut() {
            match ev {
                Event::Text(t) => buf.push_str(&t),
                Event::End(TagEnd::CodeBlock) => self.end_code(),
                _ => {}
            }
            return;
        }
        match ev {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(t) => {
                let tok = self.style();
                self.text(tok, &t);
            }
            Event::Code(t) => self.text(Tok::Str, &t),
            Event::InlineMath(t) | Event::DisplayMath(t) => self.text(Tok::Str, &t),
            Event::Html(t) | Event::InlineHtml(t) => self.text(Tok::Dim, t.trim_end_matches('\n')),
            Event::FootnoteReference(t) => self.text(Tok::Dim, &format!("[^{t}]")),
            Event::SoftBreak => self.text(self.style(), " "),
            Event::HardBreak => {
                self.flush();
            }
            Event::Rule => {
                self.start_block();
                let mut l = self.prefix();
                l.spans.push((Tok::Dim, "─".repeat(40)));
                self.out.push(l);
                self.gap = true;
            }
            Event::TaskListMarker(done) => self.text(Tok::Punct, if done { "[x] " } else { "[ ] " }),
        }
    }

    fn start(&mut self, tag: Tag) {
        match tag {
            // A list item's first paragraph continues the bullet's line.
            Tag::Paragraph if self.cur.is_none() => self.start_block(),
            Tag::Heading { level, .. } => {
                self.start_block();
                let n = match level {
                    HeadingLevel::H1 => 1,
                    HeadingLevel::H2 => 2,
                    HeadingLevel::H3 => 3,
                    HeadingLevel::H4 => 4,
                    HeadingLevel::H5 => 5,
                    HeadingLevel::H6 => 6,
                };
                let mut l = self.prefix();
                l.spans.push((Tok::Section, format!("{} ", "#".repeat(n))));
                self.cur = Some(l);
                self.styles.push(Tok::Heading);
            }
            Tag::BlockQuote(_) => {
                self.start_block();
                self.quote += 1;
            }
            Tag::CodeBlock(kind) => {
                self.start_block();
                let lang = match kind {
                    CodeBlockKind::Fenced(info) => info.split([' ', ',', '{']).next().unwrap_or("").to_string(),
                    CodeBlockKind::Indented => String::new(),
                };
                self.code = Some((lang, String::new()));
            }
            Tag::List(start) => {
                if self.lists.is_empty() {
                    self.start_block();
                } else {
                    self.flush();
                }
                self.lists.push(start);
            }
            Tag::Item => {
                self.flush();
                let depth = self.lists.len().saturating_sub(1);
                let marker = match self.lists.last_mut() {
                    Some(Some(n)) => {
                        *n += 1;
                        format!("{}. ", *n - 1)
                    }
                    _ => ["• ", "◦ ", "▪ "][depth % 3].to_string(),
                };
                let mut l = line(&self.indent);
                if self.quote > 0 {
                    l.spans.push((Tok::Dim, "▎ ".repeat(self.quote)));
                }
                l.spans.push((Tok::Text, "  ".repeat(depth)));
                l.spans.push((Tok::Punct, marker));
                l.hang = l.width().min(u16::MAX as usize) as u16;
                self.cur = Some(l);
            }
            Tag::Table(align) => {
                self.start_block();
                self.table = Some(Table {
                    align,
                    ..Default::default()
                });
            }
            Tag::TableHead => {
                if let Some(t) = self.table.as_mut() {
                    t.in_head = true;
                    t.rows.push(Vec::new());
                }
            }
            Tag::TableRow => {
                if let Some(t) = self.table.as_mut() {
                    t.rows.push(Vec::new());
                }
            }
            Tag::TableCell => {
                if let Some(t) = self.table.as_mut() {
                    t.cell.clear();
                }
            }
            Tag::Emphasis => self.styles.push(Tok::Key),
            Tag::Strong => self.styles.push(Tok::Heading),
            Tag::Strikethrough => self.styles.push(Tok::Dim),
            Tag::Link { dest_url, .. } => {
                self.link.push(dest_url.to_string());
                self.styles.push(Tok::Key);
            }
            Tag::Image { dest_url, .. } => {
                self.link.push(dest_url.to_string());
                self.text(Tok::Dim, "[image: ");
                self.styles.push(Tok::Dim);
            }
            Tag::FootnoteDefinition(label) => {
                self.start_block();
                self.text(Tok::Dim, &format!("[^{label}]: "));
            }
            _ => {}
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Paragraph => {
                self.flush();
                self.gap = true;
            }
            TagEnd::Heading(_) => {
                self.styles.pop();
                self.flush();
                self.gap = true;
            }
            TagEnd::BlockQuote(_) => {
                self.flush();
                self.quote = self.quote.saturating_sub(1);
                self.gap = true;
            }
            TagEnd::List(_) => {
                self.flush();
                self.lists.pop();
                self.gap = self.lists.is_empty();
            }
            TagEnd::Item => {
                self.flush();
                self.gap = false;
            }
            TagEnd::TableCell => {
                if let Some(t) = self.table.as_mut() {
                    let cell = std::mem::take(&mut t.cell);
                    if let Some(r) = t.rows.last_mut() {
                        r.push(cell);
                    }
                }
            }
            TagEnd::TableHead => {
                if let Some(t) = self.table.as_mut() {
                    t.in_head = false;
                    t.head_rows = t.rows.len();
                }
            }
            TagEnd::Table => {
                if let Some(t) = self.table.take() {
                    self.table_lines(t);
                }
                self.gap = true;
            }
            TagEnd::Emphasis | TagEnd::Strong | TagEnd::Strikethrough => {
                self.styles.pop();
            }
            TagEnd::Link => {
                self.styles.pop();
                if let Some(url) = self.link.pop()
                    && !url.is_empty()
                {
                    self.text(Tok::Dim, &format!(" <{url}>"));
                }
            }
            TagEnd::Image => {
                self.styles.pop();
                let url = self.link.pop().unwrap_or_default();
                self.text(Tok::Dim, &format!("] <{url}>"));
            }
            TagEnd::FootnoteDefinition => {
                self.flush();
                self.gap = true;
            }
            _ => {}
        }
    }

    fn end_code(&mut self) {
        let Some((lang, buf)) = self.code.take() else { return };
        let mut head = self.prefix();
        head.spans
            .push((Tok::Dim, format!("╭─ {}", if lang.is_empty() { "code" } else { &lang })));
        if let Some(l) = head.spans.last_mut() {
            l.1 = sanitize::line(&l.1).into_owned();
        }
        self.out.push(head);
        let hl = Highlighter::for_lang(&lang);
        let mut in_block_comment = false;
        for src in buf.trim_end_matches('\n').split('\n') {
            let mut l = self.prefix();
            l.spans.push((Tok::Dim, "│ ".into()));
            l.hang = l.width().min(u16::MAX as usize) as u16;
            let src = detab(src.trim_end_matches('\r'));
            for (tok, piece) in hl.line(&src, &mut in_block_comment) {
                l.spans.push((tok, sanitize::line(piece).into_owned()));
            }
            self.out.push(l);
        }
        let mut foot = self.prefix();
        foot.spans.push((Tok::Dim, "╰─".into()));
        self.out.push(foot);
        self.gap = true;
    }

    fn table_lines(&mut self, t: Table) {
        use unicode_width::UnicodeWidthStr;
        let ncol = t.rows.iter().map(Vec::len).max().unwrap_or(0);
        let cell_w = |c: &[(Tok, String)]| c.iter().map(|(_, s)| s.width()).sum::<usize>();
        let mut widths = vec![0usize; ncol];
        for r in &t.rows {
            for (i, c) in r.iter().enumerate() {
                widths[i] = widths[i].max(cell_w(c));
            }
        }
        for (ri, r) in t.rows.iter().enumerate() {
            let mut l = self.prefix();
            for (i, w) in widths.iter().enumerate() {
                if i > 0 {
                    l.spans.push((Tok::Punct, " │ ".into()));
                }
                let empty = Vec::new();
                let c = r.get(i).unwrap_or(&empty);
                let pad = w - cell_w(c);
                let (before, after) = match t.align.get(i) {
                    Some(Alignment::Right) => (pad, 0),
                    Some(Alignment::Center) => (pad / 2, pad - pad / 2),
                    _ => (0, pad),
                };
                l.spans.push((Tok::Text, " ".repeat(before)));
                for (tok, s) in c {
                    let tok = if ri < t.head_rows && *tok == Tok::Text {
                        Tok::Heading
                    } else {
                        *tok
                    };
                    l.spans.push((tok, s.clone()));
                }
                l.spans.push((Tok::Text, " ".repeat(after)));
            }
            self.out.push(l);
            if ri + 1 == t.head_rows {
                let mut sep = self.prefix();
                let parts: Vec<String> = widths.iter().map(|w| "─".repeat(*w)).collect();
                sep.spans.push((Tok::Punct, parts.join("─┼─")));
                self.out.push(sep);
            }
        }
    }
}

/// A keyword highlighter for code blocks: comments, strings, numbers and the keywords of a
/// few common languages. Deliberately small (see the README on why not a grammar-based one).
struct Highlighter {
    keywords: &'static [&'static str],
    line_comment: &'static [&'static str],
    block_comment: Option<(&'static str, &'static str)>,
    diff: bool,
    known: bool,
}

const RUST: &[&str] = &[
    "as", "async", "await", "break", "const", "continue", "crate", "dyn", "else", "enum", "extern", "false", "fn",
    "for", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub", "ref", "return", "self", "Self",
    "static", "struct", "super", "trait", "true", "type", "unsafe", "use", "where", "while",
];
const PYTHON: &[&str] = &[
    "and", "as", "assert", "async", "await", "break", "class", "continue", "def", "del", "elif", "else", "except",
    "False", "finally", "for", "from", "global", "if", "import", "in", "is", "lambda", "None", "nonlocal", "not", "or",
    "pass", "raise", "return", "True", "try", "while", "with", "yield", "self",
];
const JS: &[&str] = &[
    "async",
    "await",
    "break",
    "case",
    "catch",
    "class",
    "const",
    "continue",
    "default",
    "delete",
    "do",
    "else",
    "export",
    "extends",
    "false",
    "finally",
    "for",
    "from",
    "function",
    "if",
    "import",
    "in",
    "instanceof",
    "interface",
    "let",
    "new",
    "null",
    "return",
    "switch",
    "this",
    "throw",
    "true",
    "try",
    "type",
    "typeof",
    "undefined",
    "var",
    "void",
    "while",
    "yield",
];
const GO: &[&str] = &[
    "break",
    "case",
    "chan",
    "const",
    "continue",
    "default",
    "defer",
    "else",
    "false",
    "for",
    "func",
    "go",
    "if",
    "import",
    "interface",
    "map",
    "nil",
    "package",
    "range",
    "return",
    "select",
    "struct",
    "switch",
    "true",
    "type",
    "var",
];
const C: &[&str] = &[
    "auto",
    "bool",
    "break",
    "case",
    "char",
    "class",
    "const",
    "continue",
    "default",
    "do",
    "double",
    "else",
    "enum",
    "extends",
    "false",
    "final",
    "float",
    "for",
    "if",
    "import",
    "int",
    "long",
    "namespace",
    "new",
    "null",
    "nullptr",
    "private",
    "protected",
    "public",
    "return",
    "short",
    "static",
    "struct",
    "switch",
    "template",
    "this",
    "throw",
    "true",
    "typedef",
    "unsigned",
    "void",
    "while",
];
const SHELL: &[&str] = &[
    "case", "do", "done", "elif", "else", "esac", "export", "fi", "for", "function", "if", "in", "local", "return",
    "then", "until", "while",
];
const SQL: &[&str] = &[
    "and", "as", "by", "create", "delete", "from", "group", "having", "insert", "into", "join", "left", "limit", "not",
    "null", "on", "or", "order", "select", "set", "table", "update", "values", "where", "AND", "AS", "BY", "CREATE",
    "DELETE", "FROM", "GROUP", "HAVING", "INSERT", "INTO", "JOIN", "LEFT", "LIMIT", "NOT", "NULL", "ON", "OR", "ORDER",
    "SELECT", "SET", "TABLE", "UPDATE", "VALUES", "WHERE",
];
const DATA: &[&str] = &["true", "false", "null", "yes", "no"];

impl Highlighter {
    fn for_lang(lang: &str) -> Highlighter {
        let l = lang.to_ascii_lowercase();
        let (keywords, line_comment, block_comment): (&[&str], &[&str], _) = match l.as_str() {
            "rust" | "rs" => (RUST, &["//"], Some(("/*", "*/"))),
            "python" | "py" | "python3" => (PYTHON, &["#"], None),
            "js" | "javascript" | "ts" | "typescript" | "jsx" | "tsx" | "mjs" => (JS, &["//"], Some(("/*", "*/"))),
            "go" | "golang" => (GO, &["//"], Some(("/*", "*/"))),
            "c" | "h" | "cpp" | "c++" | "cc" | "java" | "kotlin" | "cs" | "csharp" | "swift" => {
                (C, &["//"], Some(("/*", "*/")))
            }
            "sh" | "bash" | "zsh" | "shell" | "console" | "shellsession" => (SHELL, &["#"], None),
            "sql" => (SQL, &["--"], Some(("/*", "*/"))),
            "json" | "jsonc" | "json5" => (DATA, &["//"], None),
            "yaml" | "yml" | "toml" | "ini" => (DATA, &["#"], None),
            "diff" | "patch" => {
                return Highlighter {
                    keywords: &[],
                    line_comment: &[],
                    block_comment: None,
                    diff: true,
                    known: true,
                };
            }
            _ => (&[], &[], None),
        };
        Highlighter {
            keywords,
            line_comment,
            block_comment,
            diff: false,
            known: !keywords.is_empty(),
        }
    }

    /// The styled pieces of one line (`in_block` carries an open block comment over lines).
    fn line<'a>(&self, s: &'a str, in_block: &mut bool) -> Vec<(Tok, &'a str)> {
        if self.diff {
            let tok = match s.as_bytes().first() {
                Some(b'+') => Tok::Ok,
                Some(b'-') => Tok::Error,
                Some(b'@') => Tok::Section,
                _ => Tok::Text,
            };
            return vec![(tok, s)];
        }
        if !self.known {
            return vec![(Tok::Text, s)];
        }
        let b = s.as_bytes();
        let mut out = Vec::new();
        let mut i = 0;
        let mut plain_from = 0;
        let emit = |out: &mut Vec<(Tok, &'a str)>, from: usize, to: usize, tok: Tok| {
            if from < to {
                out.push((tok, &s[from..to]));
            }
        };
        while i < b.len() {
            if *in_block {
                let (_, close) = self.block_comment.unwrap_or(("", "*/"));
                let end = s[i..].find(close).map_or(b.len(), |k| i + k + close.len());
                emit(&mut out, plain_from, i, Tok::Text);
                emit(&mut out, i, end, Tok::Dim);
                *in_block = end == b.len() && !s[i..].contains(close);
                i = end;
                plain_from = i;
                continue;
            }
            let rest = &s[i..];
            if let Some((open, _)) = self.block_comment
                && rest.starts_with(open)
            {
                emit(&mut out, plain_from, i, Tok::Text);
                // The opener itself is consumed with the comment body.
                let close = self.block_comment.map(|x| x.1).unwrap_or("*/");
                let end = s[i + open.len()..]
                    .find(close)
                    .map_or(b.len(), |k| i + open.len() + k + close.len());
                emit(&mut out, i, end, Tok::Dim);
                *in_block = !s[i + open.len()..].contains(close);
                i = end;
                plain_from = i;
                continue;
            }
            if self.line_comment.iter().any(|c| rest.starts_with(c)) {
                emit(&mut out, plain_from, i, Tok::Text);
                emit(&mut out, i, b.len(), Tok::Dim);
                return out;
            }
            let c = b[i];
            if c == b'"' || c == b'\'' || c == b'`' {
                emit(&mut out, plain_from, i, Tok::Text);
                let mut j = i + 1;
                while j < b.len() && b[j] != c {
                    j += if b[j] == b'\\' { 2 } else { 1 };
                }
                let mut end = (j + 1).min(b.len());
                // An escape may have stepped into a multi-byte character.
                while !s.is_char_boundary(end) {
                    end += 1;
                }
                emit(&mut out, i, end, Tok::Str);
                i = end;
                plain_from = i;
                continue;
            }
            let word_start = i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_');
            if word_start && c.is_ascii_digit() {
                let mut j = i;
                while j < b.len() && (b[j].is_ascii_alphanumeric() || b[j] == b'.' || b[j] == b'_') {
                    j += 1;
                }
                emit(&mut out, plain_from, i, Tok::Text);
                emit(&mut out, i, j, Tok::Num);
                i = j;
                plain_from = i;
                continue;
            }
            if word_start && (c.is_ascii_alphabetic() || c == b'_') {
                let mut j = i;
                while j < b.len() && (b[j].is_ascii_alphanumeric() || b[j] == b'_') {
                    j += 1;
                }
                if self.keywords.contains(&&s[i..j]) {
                    emit(&mut out, plain_from, i, Tok::Text);
                    emit(&mut out, i, j, Tok::Key);
                    plain_from = j;
                }
                i = j;
                continue;
            }
            // Step over a whole character (text may be any UTF-8).
            i += s[i..].chars().next().map_or(1, char::len_utf8);
        }
        emit(&mut out, plain_from, b.len(), Tok::Text);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(ls: &[Line]) -> Vec<String> {
        ls.iter()
            .map(|l| l.spans.iter().map(|(_, s)| s.as_str()).collect::<String>())
            .collect()
    }

    fn tok_of(ls: &[Line], needle: &str) -> Option<Tok> {
        ls.iter()
            .flat_map(|l| l.spans.iter())
            .find(|(_, s)| s.contains(needle))
            .map(|(t, _)| *t)
    }

    #[test]
    fn headings_lists_emphasis_and_code() {
        let md = "# Plan\n\nSome **bold** and *soft* with `code`.\n\n- one\n- two\n  1. inner\n\n```rust\nfn main() { let x = 42; // hi\n}\n```\n";
        let ls = render(md, "  ");
        let t = text(&ls);
        assert_eq!(t[0], "  # Plan");
        assert_eq!(t[1], "  ");
        assert_eq!(t[2], "  Some bold and soft with code.");
        assert!(t.contains(&"  • one".to_string()), "{t:?}");
        assert!(t.contains(&"    1. inner".to_string()), "{t:?}");
        assert!(t.contains(&"  ╭─ rust".to_string()), "{t:?}");
        assert!(t.contains(&"  │ fn main() { let x = 42; // hi".to_string()), "{t:?}");
        assert_eq!(tok_of(&ls, "Plan"), Some(Tok::Heading));
        assert_eq!(tok_of(&ls, "bold"), Some(Tok::Heading));
        assert_eq!(tok_of(&ls, "soft"), Some(Tok::Key));
        assert_eq!(tok_of(&ls, "code"), Some(Tok::Str));
        assert_eq!(tok_of(&ls, "fn"), Some(Tok::Key));
        assert_eq!(tok_of(&ls, "// hi"), Some(Tok::Dim));
        assert_eq!(tok_of(&ls, "42"), Some(Tok::Num));
        // Continuation rows of a list item start under its text.
        let item = ls
            .iter()
            .find(|l| text(std::slice::from_ref(l))[0] == "  • one")
            .unwrap();
        assert_eq!(item.hang, 4);
    }

    #[test]
    fn tables_align_their_columns() {
        let md = "| name | n |\n|---|--:|\n| a | 1 |\n| longer | 22 |\n";
        let t = text(&render(md, ""));
        assert_eq!(t, ["name   │  n", "───────┼───", "a      │  1", "longer │ 22"]);
    }

    #[test]
    fn quotes_links_and_rules() {
        let t = text(&render("> quoted\n\n[site](https://x.y)\n\n---\n", ""));
        assert_eq!(t[0], "▎ quoted");
        assert!(t.contains(&"site <https://x.y>".to_string()), "{t:?}");
        assert!(t.last().unwrap().starts_with("───"));
    }

    #[test]
    fn control_characters_are_escaped_everywhere() {
        let md = "# a\u{1b}[31m\n\n```sh\necho \u{1b}]0;x\u{7}\n```\n\n| c\u{202e} |\n|---|\n| d |\n";
        for l in render(md, "") {
            for (_, s) in &l.spans {
                assert!(
                    !s.chars().any(|c| c == '\u{1b}' || c == '\u{7}' || c == '\u{202e}'),
                    "{s:?}"
                );
            }
        }
        for l in plain("x\u{1b}[2J", "") {
            assert!(!l.spans.iter().any(|(_, s)| s.contains('\u{1b}')));
        }
    }

    #[test]
    fn highlighter_handles_strings_block_comments_and_diffs() {
        let h = Highlighter::for_lang("js");
        let mut open = false;
        let p = h.line("const s = \"a // b\"; /* c", &mut open);
        assert!(p.contains(&(Tok::Str, "\"a // b\"")), "{p:?}");
        assert!(open);
        let p = h.line("still */ let", &mut open);
        assert_eq!(p[0], (Tok::Dim, "still */"));
        assert!(!open);
        assert!(p.contains(&(Tok::Key, "let")));
        let d = Highlighter::for_lang("diff");
        assert_eq!(d.line("+added", &mut open), [(Tok::Ok, "+added")]);
        let u = Highlighter::for_lang("brainfuck");
        assert_eq!(u.line("+-<>", &mut open), [(Tok::Text, "+-<>")]);
        // Multi-byte text is stepped over by character.
        let p = Highlighter::for_lang("py").line("x = 'é' # ü", &mut open);
        assert_eq!(p.last(), Some(&(Tok::Dim, "# ü")));
        let p = Highlighter::for_lang("py").line("'\\é", &mut open);
        assert_eq!(p, [(Tok::Str, "'\\é")]);
    }

    #[test]
    fn huge_text_is_shown_plain() {
        let big = "# not a heading\n".repeat(MAX_MARKDOWN / 10);
        let ls = render(&big, "");
        assert_eq!(text(&ls[..1]), ["# not a heading"]);
    }
}
