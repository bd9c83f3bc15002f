//! Bug: when a clean reopen finds one segment's index missing (or failing its check), that
//! segment is recovered, but the producer state is only replayed up to its base offset and the
//! sealed segments after it are never replayed: producers that wrote there are forgotten, and
//! the snapshot written at the log end after recovery persists the loss.

mod common;

use common::*;
use mirrorlog_engine::log::{LeaderOrigin, Shutdown};
use mirrorlog_index::{LeaderEpoch, Offset, ProducerId};

#[test]
fn producer_state_survives_rebuilding_an_earlier_segments_index() {
    let dir = tempfile::tempdir().unwrap();
    let clock = clock();
    let mut log = open(dir.path(), small_config(), clock.clone(), Shutdown::Clean);
    for i in 0..100 {
        log.append_as_leader(
            producer_batch(42, 1, i * 2, 2, false, T0),
            LeaderEpoch(0),
            LeaderOrigin::Client,
        )
        .unwrap();
    }
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
