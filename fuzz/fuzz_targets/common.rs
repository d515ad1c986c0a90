//! What every target does with a source once its bytes are on disk: detect it, load it with
//! every registered format, resolve every event's payload, walk the tree and count.

use std::path::{Path, PathBuf};
use tracetui::formats::{self, REGISTRY};

/// A scratch directory of this fuzzing process, reused by every input (files are
/// overwritten, so one run never sees another's leftovers beyond the names it writes).
pub fn scratch() -> &'static Path {
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let d = std::env::temp_dir().join(format!("tracetui-fuzz-{}", std::process::id()));
        std::fs::create_dir_all(&d).expect("scratch directory");
        d
    })
}

pub fn exercise(path: &Path) {
    let _ = formats::detect(path);
    for f in REGISTRY {
        if let Ok(loaded) = f.load(path) {
            for t in &loaded.traces {
                for (i, _) in t.walk() {
                    let _ = formats::payload(t, t.event(i));
                }
                let _ = t.counts();
                let _ = t.time_span();
                let _ = t.duration();
            }
        }
        let _ = f.summarize(path);
    }
}
