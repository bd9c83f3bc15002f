//! Bug: the producer-state replay of an open read the log with every batch's CRC checked, so a
//! batch whose bytes rotted in a flushed segment below the recovery point (a segment recovery
//! does not scan) failed the whole open, and the log manager's whole start with it, as soon as
//! the replay had to read that segment (no producer snapshot above it). Kafka's
//! `rebuildProducerState` reads those segments' batch headers without checking their CRC (only
//! `LogSegment.recover` does, for the segments from the recovery point on), so its log opens;
//! the rotten batch is served as it is, for the consumer's CRC check to find.

use crate::common;

use common::*;
use mirrorlog_engine::log::{OpenOffsets, Shutdown};
use mirrorlog_index::{Offset, ProducerId};
use std::path::Path;

/// A log of producer 42's batches over several segments, flushed, with no producer snapshot
/// left and one record byte of the first segment's second batch flipped. Returns the log end.
fn rotten_log(dir: &Path, clean: bool) -> Offset {
    let mut log = producer_42_log(dir, clock());
    assert!(log.segment_count() >= 3, "several segments");
    let end = log.log_end_offset();
    log.flush().unwrap();
    assert_eq!(log.recovery_point(), end);
    if clean {
        log.close().unwrap();
    } else {
        drop(log); // a crash after the flush
    }
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "snapshot") {
            std::fs::remove_file(p).unwrap();
        }
    }
    // Bit rot in the last byte of the second batch (a record's value: its CRC no longer
    // matches, its header and framing are intact).
    let first = dir.join(format!("{:020}.log", 0));
    let mut bytes = std::fs::read(&first).unwrap();
    let batch_len =
        |at: usize| 12 + u32::from_be_bytes(bytes[at + 8..at + 12].try_into().unwrap()) as usize;
    let second = batch_len(0);
    let last_byte = second + batch_len(second) - 1;
    bytes[last_byte] ^= 0x01;
    std::fs::write(&first, bytes).unwrap();
    end
}

#[test]
fn a_rotten_batch_below_the_recovery_point_does_not_fail_an_unclean_open() {
    let dir = tempfile::tempdir().unwrap();
    let end = rotten_log(dir.path(), false);
    let (log, report) = reopen_unclean(
        dir.path(),
        clock(),
        OpenOffsets {
            log_start_offset: Offset(0),
            recovery_point: end,
            high_watermark: end,
        },
    );
    assert_eq!(
        log.log_end_offset(),
        end,
        "nothing below the recovery point is cut"
    );
    assert_eq!(report.bytes_truncated, 0);
    assert_eq!(
        log.producer_state()
            .entry(ProducerId(42))
            .map(|e| e.last_seq().get()),
        Some(199),
        "the producer state is rebuilt from every batch's header"
    );
}

#[test]
fn a_rotten_batch_does_not_fail_a_clean_open() {
    let dir = tempfile::tempdir().unwrap();
    let end = rotten_log(dir.path(), true);
    let log = open(dir.path(), small_config(), clock(), Shutdown::Clean);
    assert_eq!(log.log_end_offset(), end);
    assert_eq!(
        log.producer_state()
            .entry(ProducerId(42))
            .map(|e| e.last_seq().get()),
        Some(199)
    );
}
