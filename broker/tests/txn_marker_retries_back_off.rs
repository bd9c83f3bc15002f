//! Bug: a transaction whose markers could not be written (a partition's data directory offline)
//! was retried at every coordinator tick, about every 100 ms, with a warning each time and
//! without backoff: 10 warnings a second in the log for as long as the directory stayed
//! offline, and a retry (every partition looked up again) each tick. Now the retries back off
//! exponentially, 100 ms doubling to at most 10 s, and the failure is logged as a warning once
//! per transaction and change of reason; the retries that fail the same way again are logged at
//! debug level.
//!
//! Time is the broker's manual clock and the ticks are driven by the test; the attempts and
//! warnings are counted by a subscriber on the test's thread (the one ticking), so nothing here
//! depends on timing.

use crate::common;

use common::two_dir_broker::{SplitTxn, TwoDirs, add_partition, close, end_txn, init};
use kafka_protocol::ResponseError as E;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Metadata, Subscriber};

const T0: i64 = 1_700_000_000_000;
/// What the coordinator logs when a transaction's completion (its markers) failed.
const FAILED: &str = "completing the transaction failed";

/// Counts the events reporting a failed completion: all of them (one per attempt) and those at
/// WARN.
#[derive(Default)]
struct Counter {
    attempts: AtomicUsize,
    warnings: AtomicUsize,
}

struct Message(String);

impl Visit for Message {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            self.0 = format!("{value:?}");
        }
    }
}

impl Subscriber for Counter {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let mut m = Message(String::new());
        event.record(&mut m);
        if m.0.contains(FAILED) {
            self.attempts.fetch_add(1, Ordering::SeqCst);
            if *event.metadata().level() == Level::WARN {
                self.warnings.fetch_add(1, Ordering::SeqCst);
            }
        }
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

#[test]
fn failed_markers_are_retried_with_backoff_and_warned_once() {
    let dirs = TwoDirs::new(T0);
    let b = dirs.open();
    let split = SplitTxn::new(&dirs, &b);
    let (id, t_bad) = (split.txn_id.as_str(), &split.t_bad);
    let (err, pid, epoch) = init(&b, Some(id));
    assert_eq!(err, 0);
    assert_eq!(add_partition(&b, id, pid, epoch, t_bad), 0);
    close(b);
    // The transaction's partition is offline at the next start.
    split.fail_at_next_open(&dirs);
    let b = dirs.open();

    let counter = Arc::new(Counter::default());
    tracing::subscriber::with_default(counter.clone(), || {
        // The commit is decided; its marker for the offline partition cannot be written.
        assert_eq!(end_txn(&b, id, pid, epoch), 0);
        // 20 s of ticks, one every 100 ms.
        for _ in 0..200 {
            dirs.clock.advance(100);
            b.tick();
        }
    });
    let attempts = counter.attempts.load(Ordering::SeqCst);
    let warnings = counter.warnings.load(Ordering::SeqCst);
    // EndTxn's attempt, then retries after 0.1, 0.2, 0.4, ... 6.4 s: 8 attempts in 20 s.
    assert!(
        (2..=10).contains(&attempts),
        "{attempts} attempts to complete the transaction in 200 ticks (20 s)"
    );
    assert_eq!(warnings, 1, "the same failure is warned about once");
    assert_eq!(
        init(&b, Some(id)).0,
        E::ConcurrentTransactions.code(),
        "the transaction still waits for its marker"
    );
    close(b);

    // Repaired: the start writes the marker at once.
    let b = dirs.open();
    assert_eq!(init(&b, Some(id)).0, 0);
    close(b);
}
