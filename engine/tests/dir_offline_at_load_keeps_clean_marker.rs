//! Bug: a data directory that goes offline while its logs are loaded keeps the clean-shutdown
//! marker of the previous run, because the marker is removed only after every log is open and
//! only in online directories; the next start then trusts it and skips the recovery of a
//! directory whose storage failed (the module docs promise an offline directory is recovered
//! at the next start). Kafka's `loadLogs` deletes the marker of each directory before loading
//! its logs (KAFKA-10471), so a directory that fails, or a crash, while loading is recovered
//! next time.
//!
//! The logs of that directory that loaded before it failed are kept, offline as at run time:
//! every use through their handle (appends, `check_online` before reads) answers
//! `LogDirOffline` (KAFKA_STORAGE_ERROR).

use crate::common;

use common::*;
use mirrorlog_engine::error::EngineError;
use mirrorlog_engine::log::LeaderOrigin;
use mirrorlog_engine::manager::CLEAN_SHUTDOWN_FILE;
use mirrorlog_index::{LeaderEpoch, Offset, TopicId};
use mirrorlog_segment::io::{Fault, FaultKind, IoOp, Storage};

#[test]
fn a_dir_that_fails_while_loading_is_recovered_at_the_next_start() {
    let dirs = TwoDirSim::new();
    let (d2, sim) = (&dirs.d2, &dirs.sim);
    let open = || dirs.open();
    let (mgr, _) = open();
    let mut in_d2 = vec![];
    for p in 0..4 {
        let tp = orders(p);
        let h = mgr
            .create(&tp, TopicId([p as u8 + 1; 16]), small_config())
            .unwrap();
        h.append_as_leader_durable(client_batch(2, T0), LeaderEpoch(0), LeaderOrigin::Client)
            .unwrap();
        if h.data_dir() == d2.path() {
            in_d2.push(tp);
        }
    }
    assert_eq!(in_d2.len(), 2, "two partitions in each dir");
    mgr.shutdown().unwrap();
    assert!(sim.exists(&d2.path().join(CLEAN_SHUTDOWN_FILE)));

    // Reading one of d2's partitions fails while the other loads.
    let (loaded, failed) = (&in_d2[0], &in_d2[1]);
    let bad = d2.path().join(failed.to_string());
    sim.inject(Fault::new(IoOp::ListDir, FaultKind::Eio).on_path(bad.to_str().unwrap()));
    let (mgr, report) = open();
    assert_eq!(report.unclean_logs, 0, "both dirs were shut down cleanly");
    assert!(mgr.offline_dirs().iter().any(|(p, _)| p == d2.path()));
    assert!(mgr.get(failed).is_none(), "its load failed");
    let h = mgr
        .get(loaded)
        .expect("loaded before its dir failed: kept, offline");
    assert!(matches!(
        h.check_online(),
        Err(EngineError::LogDirOffline { .. })
    ));
    assert!(matches!(
        h.append_as_leader_durable(client_batch(1, T0), LeaderEpoch(0), LeaderOrigin::Client),
        Err(EngineError::LogDirOffline { .. })
    ));
    drop(h);
    assert!(
        !sim.exists(&d2.path().join(CLEAN_SHUTDOWN_FILE)),
        "the marker of the failed dir is gone"
    );
    mgr.shutdown().unwrap();
    assert!(!sim.exists(&d2.path().join(CLEAN_SHUTDOWN_FILE)));

    // The disk works again: d2's logs are recovered, d1's (shut down cleanly) are not.
    let (mgr, report) = open();
    assert!(mgr.offline_dirs().is_empty());
    assert_eq!(report.logs, 4);
    assert_eq!(
        report.unclean_logs, 2,
        "d2's logs are recovered after its failure"
    );
    for tp in &in_d2 {
        assert_eq!(mgr.get(tp).unwrap().read().log_end_offset(), Offset(2));
    }
    mgr.shutdown().unwrap();
}
