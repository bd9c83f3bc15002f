//! Bug: when a clean reopen finds one segment's index missing (or failing its check), that
//! segment is recovered, but the producer state is only replayed up to its base offset and the
//! sealed segments after it are never replayed: producers that wrote there are forgotten, and
//! the snapshot written at the log end after recovery persists the loss.

use crate::common;

use common::*;
use mirrorlog_engine::log::{LeaderOrigin, Shutdown};
use mirrorlog_index::{LeaderEpoch, Offset, ProducerId};

#[test]
fn producer_state_survives_rebuilding_an_earlier_segments_index() {
    let dir = tempfile::tempdir().unwrap();
    let clock = clock();
    let log = producer_42_log(dir.path(), clock.clone());
    assert!(log.segment_count() >= 3, "several segments");
    let first = log.segment_base_offsets()[0];
    log.close().unwrap();
    // The first segment's offset index is lost while the broker is down.
    std::fs::remove_file(dir.path().join(format!("{:020}.index", first.get()))).unwrap();

    let log = open(dir.path(), small_config(), clock.clone(), Shutdown::Clean);
    assert_eq!(log.log_end_offset(), Offset(200));
    assert_eq!(
        log.producer_state()
            .entry(ProducerId(42))
            .map(|e| e.last_seq().get()),
        Some(199),
        "the producer's last sequence is the one of its last batch"
    );
}

#[test]
fn producer_state_survives_rebuilding_an_index_below_the_recovery_point() {
    use mirrorlog_engine::log::OpenOffsets;
    let dir = tempfile::tempdir().unwrap();
    let clock = clock();
    let mut log = open(dir.path(), small_config(), clock.clone(), Shutdown::Clean);
    let mut append = |pid: i64, seq: i32| {
        log.append_as_leader(
            producer_batch(pid, 1, seq, 2, false, T0),
            LeaderEpoch(0),
            LeaderOrigin::Client,
        )
        .unwrap();
    };
    for i in 0..60 {
        append(42, i * 2);
    }
    // Producer 7 writes only in the middle of the log.
    for i in 0..20 {
        append(7, i * 2);
    }
    for i in 60..160 {
        append(42, i * 2);
    }
    log.flush().unwrap();
    let rp = log.recovery_point();
    let bases = log.segment_base_offsets();
    assert!(bases.len() >= 4);
    drop(log); // crash
    std::fs::remove_file(dir.path().join(format!("{:020}.index", bases[0].get()))).unwrap();
    let (log, _) = reopen_unclean(
        dir.path(),
        clock,
        OpenOffsets {
            log_start_offset: Offset(0),
            recovery_point: rp,
            high_watermark: rp,
        },
    );
    assert_eq!(log.log_end_offset(), Offset(360));
    assert_eq!(
        log.producer_state()
            .entry(ProducerId(7))
            .map(|e| e.last_seq().get()),
        Some(39),
        "the producer that wrote in the middle segments is known"
    );
}
