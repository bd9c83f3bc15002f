//! Scenario: every producer snapshot is deleted while the broker is down. The producer state is
//! rebuilt by replaying the log, so duplicate detection and sequence checks still work.

use crate::common;

use common::*;
use mirrorlog_engine::error::EngineError;
use mirrorlog_engine::log::{LeaderOrigin, Shutdown};
use mirrorlog_index::{LeaderEpoch, Offset, ProducerId};

#[test]
fn producer_state_is_rebuilt_from_the_log_without_snapshots() {
    let dir = tempfile::tempdir().unwrap();
    let clock = clock();
    let log = producer_42_log(dir.path(), clock.clone());
    log.close().unwrap();
    let snaps: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "snapshot"))
        .collect();
    assert!(!snaps.is_empty(), "rolls and close wrote snapshots");
    for s in snaps {
        std::fs::remove_file(s).unwrap();
    }
    let mut log = open(dir.path(), small_config(), clock, Shutdown::Clean);
    assert_eq!(
        log.producer_state()
            .entry(ProducerId(42))
            .unwrap()
            .last_seq()
            .get(),
        199
    );
    // The last batch retried: a duplicate with its original offsets.
    let info = log
        .append_as_leader(
            producer_batch(42, 1, 198, 2, false, T0),
            LeaderEpoch(0),
            LeaderOrigin::Client,
        )
        .unwrap();
    assert!(info.duplicate);
    assert_eq!(
        (info.first_offset, info.last_offset),
        (Offset(198), Offset(199))
    );
    // A gap is still refused.
    let r = log.append_as_leader(
        producer_batch(42, 1, 205, 1, false, T0),
        LeaderEpoch(0),
        LeaderOrigin::Client,
    );
    assert!(matches!(r, Err(EngineError::ProducerState(_))));
}
