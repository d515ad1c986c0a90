//! Work on every core whose results are used in order: workers take the next item as they
//! finish one (so one slow item holds up no other core, as batches waited on their slowest),
//! and stay a bounded number of items ahead of the consumer (which bounds what is held).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Run `work` on items `0..n` on every core and hand each result to `each` in item order, as
/// soon as it and all before it are done; `each` runs on the calling thread and returns false
/// to stop. At most `lead` items are done or under way past the last one handed over.
pub fn in_order<T: Send>(
    n: usize,
    lead: usize,
    work: impl Fn(usize) -> T + Sync,
    mut each: impl FnMut(usize, T) -> bool,
) {
    let lead = lead.max(1);
    let next = AtomicUsize::new(0);
    let handed = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::scope(|scope| {
        for _ in 0..rayon::current_num_threads().max(1).min(n) {
            let tx = tx.clone();
            let (next, handed, stop, work) = (&next, &handed, &stop, &work);
            scope.spawn(move || {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= n {
                        return;
                    }
                    while i >= handed.load(Ordering::Acquire) + lead && !stop.load(Ordering::Relaxed) {
                        std::thread::sleep(std::time::Duration::from_millis(1));
                    }
                    if stop.load(Ordering::Relaxed) || tx.send((i, work(i))).is_err() {
                        return;
                    }
                }
            });
        }
        drop(tx);
        let mut pending = std::collections::HashMap::new();
        let mut at = 0;
        for (i, res) in rx {
            pending.insert(i, res);
            while let Some(res) = pending.remove(&at) {
                if !each(at, res) {
                    stop.store(true, Ordering::Relaxed);
                    return;
                }
                at += 1;
                handed.store(at, Ordering::Release);
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_come_in_order_and_stop_when_asked() {
        // Items that take longer the earlier they are: finished out of order.
        let mut seen = Vec::new();
        in_order(
            40,
            4,
            |i| {
                std::thread::sleep(std::time::Duration::from_micros(((40 - i) * 50) as u64));
                i * 10
            },
            |i, r| {
                seen.push((i, r));
                true
            },
        );
        assert_eq!(seen, (0..40).map(|i| (i, i * 10)).collect::<Vec<_>>());
        let mut count = 0;
        in_order(
            1000,
            2,
            |i| i,
            |_, _| {
                count += 1;
                count < 5
            },
        );
        assert_eq!(count, 5);
        in_order(0, 2, |i| i, |_, _| panic!("no items"));
    }

    #[test]
    fn workers_stay_within_the_lead() {
        let max_ahead = AtomicUsize::new(0);
        let handed = AtomicUsize::new(0);
        in_order(
            200,
            3,
            |i| {
                let ahead = i.saturating_sub(handed.load(Ordering::SeqCst));
                max_ahead.fetch_max(ahead, Ordering::SeqCst);
            },
            |i, ()| {
                handed.store(i + 1, Ordering::SeqCst);
                true
            },
        );
        assert!(
            max_ahead.load(Ordering::SeqCst) < 3,
            "{}",
            max_ahead.load(Ordering::SeqCst)
        );
    }
}
