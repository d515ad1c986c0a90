#!/usr/bin/env python3
"""Render the explorer on sample-traces/ to docs/explorer.svg.

Runs the built binary in a private tmux server at 120x40, sends a few keys, captures the
pane with its colours (`tmux capture-pane -p -e`) and writes the ANSI text as an SVG of
monospace text with those colours.

    python3 docs/screenshot.py [--bin PATH] [--out docs/explorer.svg] [--keys KEY ...]

--bin defaults to the newer of $CARGO_TARGET_DIR/release/tracetui and .../debug/tracetui
(target/ when CARGO_TARGET_DIR is not set). Run it from the repository root. Needs tmux.
"""

import argparse
import html
import os
import subprocess
import sys
import tempfile
import time
import unicodedata

COLS, ROWS = 120, 40
CELL_W, CELL_H, FONT = 8.4, 17, 14
FG, BG = "#d4d4d4", "#1e1e1e"

# xterm's 16 colours, then the 6x6x6 cube and the grey ramp.
BASE16 = [
    "#000000", "#cd3131", "#0dbc79", "#e5e510", "#2472c8", "#bc3fbc", "#11a8cd", "#e5e5e5",
    "#666666", "#f14c4c", "#23d18b", "#f5f543", "#3b8eea", "#d670d6", "#29b8db", "#ffffff",
]


def color256(n):
    if n < 16:
        return BASE16[n]
    if n < 232:
        n -= 16
        steps = [0, 95, 135, 175, 215, 255]
        r, g, b = steps[n // 36], steps[(n // 6) % 6], steps[n % 6]
        return f"#{r:02x}{g:02x}{b:02x}"
    v = 8 + 10 * (n - 232)
    return f"#{v:02x}{v:02x}{v:02x}"


class Style:
    def __init__(self):
        self.reset()

    def reset(self):
        self.fg = self.bg = None
        self.bold = self.dim = self.italic = self.underline = self.reverse = False

    def key(self):
        return (self.fg, self.bg, self.bold, self.dim, self.italic, self.underline, self.reverse)

    def sgr(self, params):
        p = [int(x) if x else 0 for x in params.split(";")] if params else [0]
        i = 0
        while i < len(p):
            c = p[i]
            if c == 0:
                self.reset()
            elif c == 1:
                self.bold = True
            elif c == 2:
                self.dim = True
            elif c == 3:
                self.italic = True
            elif c == 4:
                self.underline = True
            elif c == 7:
                self.reverse = True
            elif c == 22:
                self.bold = self.dim = False
            elif c == 23:
                self.italic = False
            elif c == 24:
                self.underline = False
            elif c == 27:
                self.reverse = False
            elif 30 <= c <= 37:
                self.fg = BASE16[c - 30]
            elif 90 <= c <= 97:
                self.fg = BASE16[c - 90 + 8]
            elif 40 <= c <= 47:
                self.bg = BASE16[c - 40]
            elif 100 <= c <= 107:
                self.bg = BASE16[c - 100 + 8]
            elif c == 39:
                self.fg = None
            elif c == 49:
                self.bg = None
            elif c in (38, 48) and i + 1 < len(p):
                if p[i + 1] == 5 and i + 2 < len(p):
                    col = color256(p[i + 2])
                    i += 2
                elif p[i + 1] == 2 and i + 4 < len(p):
                    col = "#{:02x}{:02x}{:02x}".format(*p[i + 2 : i + 5])
                    i += 4
                else:
                    col = None
                if c == 38:
                    self.fg = col
                else:
                    self.bg = col
            i += 1


def width(ch):
    if unicodedata.combining(ch):
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


def parse(ansi):
    """Rows of (column, text, style key) runs."""
    rows = []
    style = Style()
    for line in ansi.split("\n")[:ROWS]:
        runs, col, i, buf, start = [], 0, 0, "", 0
        while i < len(line):
            ch = line[i]
            if ch == "\x1b" and line[i + 1 : i + 2] == "[":
                j = i + 2
                while j < len(line) and not ("@" <= line[j] <= "~"):
                    j += 1
                if buf:
                    runs.append((start, buf, style.key()))
                    buf = ""
                if j < len(line) and line[j] == "m":
                    style.sgr(line[i + 2 : j])
                i = j + 1
                start = col
                continue
            if not buf:
                start = col
            buf += ch
            col += width(ch)
            i += 1
        if buf:
            runs.append((start, buf, style.key()))
        rows.append(runs)
    return rows


def svg(rows):
    w, h = COLS * CELL_W, ROWS * CELL_H
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{w:.0f}" height="{h + 16:.0f}" '
        f'viewBox="0 0 {w:.0f} {h + 16:.0f}" font-family="\'DejaVu Sans Mono\', Menlo, Consolas, monospace" '
        f'font-size="{FONT}">',
        f'<rect width="100%" height="100%" rx="6" fill="{BG}"/>',
        '<g transform="translate(0 8)">',
    ]
    texts = []
    for r, runs in enumerate(rows):
        y = r * CELL_H
        for col, text, (fg, bg, bold, dim, italic, underline, reverse) in runs:
            cells = sum(width(c) for c in text)
            fgc, bgc = fg or FG, bg
            if reverse:
                fgc, bgc = (bg or BG), (fg or FG)
            if bgc:
                out.append(
                    f'<rect x="{col * CELL_W:.1f}" y="{y}" width="{cells * CELL_W:.1f}" '
                    f'height="{CELL_H}" fill="{bgc}"/>'
                )
            if not text.strip():
                continue
            attrs = f'fill="{fgc}"'
            if bold:
                attrs += ' font-weight="bold"'
            if dim:
                attrs += ' opacity="0.6"'
            if italic:
                attrs += ' font-style="italic"'
            if underline:
                attrs += ' text-decoration="underline"'
            texts.append(
                f'<text x="{col * CELL_W:.1f}" y="{y + CELL_H - 4}" {attrs} xml:space="preserve" '
                f'textLength="{cells * CELL_W:.1f}" lengthAdjust="spacingAndGlyphs">'
                f"{html.escape(text, quote=False)}</text>"
            )
    out.extend(texts)
    out.append("</g></svg>")
    return "\n".join(out) + "\n"


def default_bin():
    """The newer of the release and debug builds (an old release build would show old screens)."""
    target = os.environ.get("CARGO_TARGET_DIR", "target")
    paths = [os.path.join(target, p, "tracetui") for p in ("release", "debug")]
    paths = [p for p in paths if os.access(p, os.X_OK)]
    if not paths:
        sys.exit("no tracetui binary: build it (cargo build) or give --bin")
    return max(paths, key=os.path.getmtime)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default=None)
    ap.add_argument("--out", default="docs/explorer.svg")
    ap.add_argument("--path", default="sample-traces/")
    # Filter the runs to invoice-mailer, open it, select its second tool call (the failed send_email).
    ap.add_argument("--keys", nargs="*", default=None)
    args = ap.parse_args()
    binary = os.path.abspath(args.bin or default_bin())
    keys = args.keys if args.keys is not None else ["/", "invoice", "Enter", "Enter", "t", "t"]

    socket = f"tracetui-shot-{os.getpid()}"
    with tempfile.TemporaryDirectory() as home:
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": home,
            "TERM": "xterm-256color",
            "COLORTERM": "truecolor",
            "TZ": "UTC",
            "LANG": "C.UTF-8",
            "TRACETUI_CACHE_DIR": os.path.join(home, "cache"),
            "XDG_CONFIG_HOME": os.path.join(home, "config"),
        }
        tmux = ["tmux", "-L", socket, "-f", "/dev/null"]
        cmd = f"{binary} {args.path}"
        subprocess.run(
            tmux + ["new-session", "-d", "-x", str(COLS), "-y", str(ROWS), "-s", "shot", cmd],
            env=env,
            check=True,
        )
        try:
            time.sleep(2.0)
            for key in keys:
                if key in ("Enter", "Escape", "Tab", "Down", "Up", "Space"):
                    subprocess.run(tmux + ["send-keys", "-t", "shot", key], check=True)
                else:
                    subprocess.run(tmux + ["send-keys", "-t", "shot", "-l", key], check=True)
                time.sleep(0.5)
            time.sleep(1.0)
            ansi = subprocess.run(
                tmux + ["capture-pane", "-p", "-e", "-t", "shot"],
                check=True,
                capture_output=True,
                text=True,
            ).stdout
        finally:
            subprocess.run(tmux + ["kill-server"], capture_output=True)
    with open(args.out, "w") as f:
        f.write(svg(parse(ansi)))
    print(f"wrote {args.out} ({len(ansi.splitlines())} rows)")


if __name__ == "__main__":
    main()
