//! Bug: a storage failure in one data directory during a clean shutdown (a log's last flush
//! failing there) stopped the whole shutdown at that log: no other directory had its
//! checkpoints written or its clean-shutdown marker, and the logs not yet closed wrote no
//! producer snapshot, so the next start recovered every log of every directory. Kafka's
//! `LogManager.shutdown` runs each directory's logs apart: the failed directory goes offline
//! (and is recovered at the next start), the others are marked clean.

use crate::common;

use common::*;
use mirrorlog_engine::manager::CLEAN_SHUTDOWN_FILE;
use mirrorlog_index::Offset;
use mirrorlog_segment::io::{Fault, FaultKind, IoOp, Storage, TornTail};
use std::sync::Arc;

#[test]
fn a_sync_failing_in_one_dir_at_shutdown_leaves_the_other_dir_clean() {
    let two = TwoDirSim::new();
    let (d1, d2) = (two.d1.path().to_path_buf(), two.d2.path().to_path_buf());
    let sim = two.sim.clone();
    let (mgr, _) = two.open();
    // Not synced: the shutdown's flush is the first sync of these records.
    orders_with_two_records(&mgr, 4);
    let in_d1: Vec<i32> = (0..4)
        .filter(|p| mgr.get(&orders(*p)).unwrap().data_dir() == d1.as_path())
        .collect();
    assert_eq!(in_d1.len(), 2);
    // Every partition of d1 fails its next sync: whichever is flushed first takes d1 offline.
    for p in &in_d1 {
        sim.inject(
            Fault::new(IoOp::SyncData, FaultKind::SyncFails).on_path(orders(*p).to_string()),
        );
    }
    assert!(mgr.shutdown().is_err(), "the failure is reported");
    assert!(!sim.exists(&d1.join(CLEAN_SHUTDOWN_FILE)));
    assert!(
        sim.exists(&d2.join(CLEAN_SHUTDOWN_FILE)),
        "the directory that did not fail is marked clean"
    );

    // The restart keeps what was made durable (and none of the injected faults).
    let restarted = TwoDirSim {
        sim: Arc::new(sim.crash(TornTail::None)),
        ..two
    };
    let (mgr, report) = restarted.open();
    assert_eq!(report.logs, 4);
    assert_eq!(
        report.unclean_logs, 2,
        "only the failed directory's logs are recovered"
    );
    for p in 0..4 {
        if !in_d1.contains(&p) {
            assert_eq!(
                mgr.get(&orders(p)).unwrap().read().log_end_offset(),
                Offset(2)
            );
        }
    }
}
