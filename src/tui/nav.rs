//! What several views share to move and to speak: a selection moved by a key, the offset that
//! keeps it in view, the wheel's step, a message in the status bar, and an event revealed in the
//! tree. Views take these from here, not from `update` (which only dispatches to them).

use super::action::Command;
use super::state::*;
use crate::model::NO_PARENT;

/// Ticks a message stays on screen (the app ticks every 100 ms).
pub const MESSAGE_TICKS: u64 = 40;

pub const WHEEL_STEP: usize = 3;

pub fn say(s: &mut State, text: impl Into<String>, error: bool) {
    s.message = Some(Message {
        text: text.into(),
        error,
        until: s.tick + MESSAGE_TICKS,
    });
}

/// The offset that keeps `sel` inside a window of `h` rows.
pub fn follow(sel: usize, offset: usize, h: usize, n: usize) -> usize {
    let mut o = offset.min(n.saturating_sub(1));
    if sel < o {
        o = sel;
    } else if sel >= o + h {
        o = sel + 1 - h;
    }
    // Do not leave empty rows at the bottom when the list could fill the window.
    o.min(n.saturating_sub(h))
}

pub fn move_sel(sel: usize, n: usize, c: Command, page: usize) -> usize {
    let last = n.saturating_sub(1);
    match c {
        Command::Up => sel.saturating_sub(1),
        Command::Down => (sel + 1).min(last),
        Command::Top => 0,
        Command::Bottom => last,
        Command::PageDown => (sel + (page / 2).max(1)).min(last),
        Command::PageUp => sel.saturating_sub((page / 2).max(1)),
        _ => sel,
    }
}

pub fn is_move(c: Command) -> bool {
    matches!(
        c,
        Command::Up | Command::Down | Command::Top | Command::Bottom | Command::PageDown | Command::PageUp
    )
}

/// Expand every collapsed ancestor of `ev` (rebuilding the rows only if one was collapsed).
pub fn reveal(r: &mut RunView, ev: u32) {
    let mut changed = false;
    let h = r.trace.clone();
    let t = read(&h);
    let mut p = t.event(ev).parent;
    while p != NO_PARENT {
        if r.collapsed.get_mut(p as usize).is_some_and(std::mem::take) {
            changed = true;
        }
        p = t.event(p).parent;
    }
    if changed {
        r.rebuild_rows_with(&t);
    }
}
