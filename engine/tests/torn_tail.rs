//! Scenario: the process dies mid-write, leaving a partial batch at the end of the active
//! segment. Reopening uncleanly cuts the torn bytes and keeps every whole batch.

use crate::common;

use common::*;
use mirrorlog_engine::log::{LeaderOrigin, Shutdown};
use mirrorlog_index::{LeaderEpoch, Offset};
use std::io::Write;

#[test]
fn a_torn_tail_is_cut_and_every_whole_batch_kept() {
    let dir = tempfile::tempdir().unwrap();
    let clock = clock();
    let mut log = open(dir.path(), small_config(), clock.clone(), Shutdown::Clean);
    for _ in 0..10 {
        log.append_as_leader(client_batch(3, T0), LeaderEpoch(0), LeaderOrigin::Client)
            .unwrap();
    }
    log.flush().unwrap();
    let active = log.segment_base_offsets().last().copied().unwrap();
    drop(log);
    let path = dir.path().join(format!("{:020}.log", active.get()));
    let half = client_batch(3, T0);
    std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap()
        .write_all(&half[..half.len() / 2])
        .unwrap();
    let (log, report) = mirrorlog_engine::log::PartitionLog::open(
        std::sync::Arc::new(mirrorlog_segment::io::PwriteStorage::new()),
        dir.path(),
        "t-0",
        small_config(),
        clock,
        Shutdown::Unclean,
        Default::default(),
    )
    .unwrap();
    assert_eq!(report.bytes_truncated, (half.len() / 2) as u64);
    assert!(
        report.problems[0].contains("torn batch"),
        "{:?}",
        report.problems
    );
    assert_eq!(log.log_end_offset(), Offset(30));
    assert_eq!(values(&log, Offset(0)).len(), 30);
}
