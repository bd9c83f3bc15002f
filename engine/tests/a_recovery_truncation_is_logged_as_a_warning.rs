//! Bug: recovery that cut a segment at a corrupt batch deleted every segment after it, flushed
//! or not, without a word: the segment's warning names only the file it cut, the `LoadReport`
//! that counts the deleted segments is logged by nothing (the broker logs the unclean logs'
//! count and the bytes cut). An operator could not tell from the log that whole later segments
//! of the partition were gone, nor from which offset on. Kafka logs "Deleting segments as part
//! of log recovery: …" with the segments.

use crate::common;

use common::*;
use mirrorlog_engine::log::OpenOffsets;
use std::sync::{Arc, Mutex};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Metadata, Subscriber};

/// Collects the WARN-and-above events, each as its fields joined into one line.
#[derive(Default)]
struct Warnings(Arc<Mutex<Vec<String>>>);

struct Line(String);

impl Visit for Line {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.push_str(&format!(" {}={value:?}", field.name()));
    }
}

impl Subscriber for Warnings {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        if *event.metadata().level() <= Level::WARN {
            let mut line = Line(String::new());
            event.record(&mut line);
            self.0.lock().unwrap().push(line.0);
        }
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

#[test]
fn a_corrupt_batch_found_by_recovery_is_logged_as_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let clock = clock();
    let bases = closed_replica_log(dir.path(), clock.clone());
    // A byte flips in the second segment's third batch.
    let bad = corrupt_third_batch(dir.path(), bases[1]);

    let warnings = Warnings::default();
    let seen = warnings.0.clone();
    let (log, _) = tracing::subscriber::with_default(warnings, || {
        reopen_unclean(dir.path(), clock, OpenOffsets::default())
    });
    assert_eq!(log.log_end_offset(), bad.base_offset());
    let seen = seen.lock().unwrap();
    let deleted: Vec<String> = bases[2..].iter().map(|b| b.to_string()).collect();
    let line = seen
        .iter()
        .find(|l| l.contains(&deleted.join(", ")))
        .unwrap_or_else(|| panic!("no warning lists the deleted segments: {seen:?}"));
    assert!(line.contains("log=t-0"), "{line}");
    assert!(
        line.contains(&format!("truncated_to={}", bad.base_offset())),
        "{line}"
    );
    assert!(
        line.contains(&format!("deleting the {} segments", deleted.len())),
        "{line}"
    );
}
