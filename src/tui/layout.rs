//! Screen geometry, computed from the terminal size alone: rendering draws into these areas
//! and `update` uses the same ones for page sizes and mouse hit tests.

use ratatui::layout::Rect;

pub const MIN_WIDTH: u16 = 60;
pub const MIN_HEIGHT: u16 = 16;

pub fn too_small(area: Rect) -> bool {
    area.width < MIN_WIDTH || area.height < MIN_HEIGHT
}

/// Inside of a bordered block.
pub fn inner(r: Rect) -> Rect {
    Rect {
        x: r.x.saturating_add(1),
        y: r.y.saturating_add(1),
        width: r.width.saturating_sub(2),
        height: r.height.saturating_sub(2),
    }
}

/// Below the one-line column header of a bordered table.
pub fn body(r: Rect) -> Rect {
    let i = inner(r);
    Rect {
        y: i.y + 1.min(i.height),
        height: i.height.saturating_sub(1),
        ..i
    }
}

pub struct RunsLayout {
    pub title: Rect,
    /// Bordered block: column header, then one row per run.
    pub table: Rect,
    pub footer: Rect,
}

pub fn runs(area: Rect) -> RunsLayout {
    RunsLayout {
        title: Rect { height: 1, ..area },
        table: Rect {
            y: area.y + 1,
            height: area.height.saturating_sub(2),
            ..area
        },
        footer: Rect {
            y: area.y + area.height.saturating_sub(1),
            height: 1,
            ..area
        },
    }
}

pub struct RunLayout {
    pub title: Rect,
    /// Two lines: status, model, duration; counts and tokens.
    pub header: Rect,
    /// Bordered: column header, then the event rows.
    pub tree: Rect,
    /// Bordered: the selected event.
    pub detail: Rect,
    pub footer: Rect,
    /// Tree and detail side by side (wide terminals) or stacked.
    pub side_by_side: bool,
}

pub fn run(area: Rect) -> RunLayout {
    let title = Rect { height: 1, ..area };
    let header = Rect {
        y: area.y + 1,
        height: 2,
        ..area
    };
    let footer = Rect {
        y: area.y + area.height.saturating_sub(1),
        height: 1,
        ..area
    };
    let main = Rect {
        y: area.y + 3,
        height: area.height.saturating_sub(4),
        ..area
    };
    let side_by_side = area.width >= 110;
    let (tree, detail) = if side_by_side {
        let tw = main.width * 11 / 20;
        (
            Rect { width: tw, ..main },
            Rect {
                x: main.x + tw,
                width: main.width - tw,
                ..main
            },
        )
    } else {
        let th = main.height / 2;
        (
            Rect { height: th, ..main },
            Rect {
                y: main.y + th,
                height: main.height - th,
                ..main
            },
        )
    };
    RunLayout {
        title,
        header,
        tree,
        detail,
        footer,
        side_by_side,
    }
}

/// The run view with one pane filling the space of both (zoom): the other is left empty.
pub fn zoomed(mut l: RunLayout, detail: bool) -> RunLayout {
    let (a, b) = (l.tree, l.detail);
    let all = a.union(b);
    let none = Rect {
        width: 0,
        height: 0,
        ..all
    };
    (l.tree, l.detail) = if detail { (none, all) } else { (all, none) };
    l
}

pub struct DiffLayout {
    pub title: Rect,
    /// Verdict, counts, metric deltas, notes: as many lines as the diff view asks for.
    pub header: Rect,
    /// Bordered: column header, then the aligned calls (or the detail of one pair).
    pub rows: Rect,
    pub footer: Rect,
}

/// The diff view with a header of `header_lines`, at most a third of the screen.
pub fn diff(area: Rect, header_lines: usize) -> DiffLayout {
    let hh = (header_lines as u16).clamp(1, (area.height.saturating_sub(2) / 3).max(1));
    DiffLayout {
        title: Rect { height: 1, ..area },
        header: Rect {
            y: area.y + 1,
            height: hh,
            ..area
        },
        rows: Rect {
            y: area.y + 1 + hh,
            height: area.height.saturating_sub(2 + hh),
            ..area
        },
        footer: Rect {
            y: area.y + area.height.saturating_sub(1),
            height: 1,
            ..area
        },
    }
}

/// The most the help overlay takes: the screen less a margin (its lines decide how much of it).
pub fn help(area: Rect) -> Rect {
    let w = area.width.saturating_sub(4);
    let h = area.height.saturating_sub(2);
    Rect {
        x: area.x + (area.width - w) / 2,
        y: area.y + (area.height - h) / 2,
        width: w,
        height: h,
    }
}

pub fn contains(r: Rect, x: u16, y: u16) -> bool {
    x >= r.x && x < r.x + r.width && y >= r.y && y < r.y + r.height
}
