//! A log whose directory holds no segment at all (a crash inside a full truncation, after the
//! old segments went and before the new one was made) starts one at its checkpointed log start.
//! Its epoch checkpoint may still list epochs: Kafka's `LogLoader.load` trims them to the log
//! it loaded, `truncateFromEnd(log end)` then `truncateFromStart(log start)`, so the entries at
//! or past the new segment's offset go and the last epoch below it stays, moved to that offset.
//! The open here cleared every entry instead, so the epoch the log's records were written in
//! was lost (an OffsetForLeaderEpoch asking for it was answered as for an unknown epoch).

use crate::common;

use common::*;
use mirrorlog_engine::log::{LeaderOrigin, OpenOffsets, PartitionLog, Shutdown};
use mirrorlog_index::{EpochEntry, LeaderEpoch, Offset};
use mirrorlog_segment::io::PwriteStorage;
use std::path::Path;
use std::sync::Arc;

const CHECKPOINT: &str = "leader-epoch-checkpoint";

/// A log in `dir` of epochs 3 (offsets 0..10), 5 (10..20) and 7 (20..30), closed, whose
/// segments are then removed as a crash inside a full truncation leaves them.
fn epochs_without_segments(dir: &Path) {
    let mut log = open(dir, small_config(), clock(), Shutdown::Clean);
    for epoch in [3, 5, 7] {
        log.append_as_leader(
            client_batch(10, T0),
            LeaderEpoch(epoch),
            LeaderOrigin::Client,
        )
        .unwrap();
    }
    log.close().unwrap();
    assert_eq!(
        std::fs::read_to_string(dir.join(CHECKPOINT)).unwrap(),
        "0\n3\n3 0\n5 10\n7 20\n"
    );
    for entry in std::fs::read_dir(dir).unwrap() {
        let p = entry.unwrap().path();
        let name = p.file_name().unwrap().to_str().unwrap();
        if [".log", ".index", ".timeindex", ".txnindex", ".snapshot"]
            .iter()
            .any(|s| name.ends_with(s))
        {
            std::fs::remove_file(&p).unwrap();
        }
    }
}

fn reopen_at(dir: &Path, log_start: i64) -> PartitionLog {
    open_with(
        Arc::new(PwriteStorage::new()),
        dir,
        small_config(),
        clock(),
        Shutdown::Unclean,
        OpenOffsets {
            log_start_offset: Offset(log_start),
            recovery_point: Offset(0),
            high_watermark: Offset(0),
        },
    )
}

#[test]
fn the_last_epoch_below_the_log_start_stays_at_the_log_start() {
    for (log_start, kept, file) in [
        // Inside epoch 5: epoch 7 goes (it starts past the log end), 3 goes below 5.
        (15, (5, 15), "0\n1\n5 15\n"),
        // At epoch 7's start: 7 starts at the log end and goes, 5 is the last below.
        (20, (5, 20), "0\n1\n5 20\n"),
        // Past every epoch: the latest stays.
        (40, (7, 40), "0\n1\n7 40\n"),
    ] {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("t-0");
        epochs_without_segments(&dir);
        let log = reopen_at(&dir, log_start);
        assert_eq!(log.log_end_offset(), Offset(log_start));
        assert_eq!(
            log.epoch_cache().entries(),
            &[EpochEntry {
                epoch: LeaderEpoch(kept.0),
                start_offset: Offset(kept.1),
            }],
            "log start {log_start}"
        );
        assert_eq!(
            std::fs::read_to_string(dir.join(CHECKPOINT)).unwrap(),
            file,
            "log start {log_start}"
        );
        assert_eq!(log.leader_epoch(), LeaderEpoch(kept.0));
    }
}

#[test]
fn at_the_first_epochs_start_nothing_is_below_and_the_cache_empties() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("t-0");
    epochs_without_segments(&dir);
    let log = reopen_at(&dir, 0);
    assert_eq!(log.epoch_cache().entries(), &[] as &[EpochEntry]);
    assert_eq!(
        std::fs::read_to_string(dir.join(CHECKPOINT)).unwrap(),
        "0\n0\n"
    );
}
