//! Bug: a partition whose log failed to load (an I/O error takes its data directory offline)
//! was simply absent from the `LogManager`, so `create` (CreateTopics, auto-create, the
//! coordinators creating their internal partitions) made it anew, empty, in the other, online
//! directory; the next start, the failed directory repaired, then refused to open on the
//! duplicate partition directories. Kafka keeps such a replica offline (KAFKA_STORAGE_ERROR)
//! and never recreates it in another directory.

use crate::common;

use common::*;
use mirrorlog_engine::error::EngineError;
use mirrorlog_engine::log::LeaderOrigin;
use mirrorlog_index::{LeaderEpoch, Offset, TopicId};
use mirrorlog_segment::io::{Fault, FaultKind, IoOp};

#[test]
fn a_partition_whose_dir_failed_while_loading_is_not_created_again_elsewhere() {
    let dirs = TwoDirSim::new();
    let (d1, d2, sim) = (&dirs.d1, &dirs.d2, &dirs.sim);
    let open = || dirs.open();
    let (mgr, _) = open();
    let mut in_d2 = vec![];
    for p in 0..4 {
        let tp = orders(p);
        let h = mgr.create(&tp, TopicId([7; 16]), small_config()).unwrap();
        h.append_as_leader_durable(client_batch(2, T0), LeaderEpoch(0), LeaderOrigin::Client)
            .unwrap();
        if h.data_dir() == d2.path() {
            in_d2.push(tp);
        }
    }
    assert_eq!(in_d2.len(), 2, "two partitions in each dir");
    mgr.shutdown().unwrap();

    // Listing one of d2's partitions fails while loading: d2 goes offline.
    let (loaded, failed) = (&in_d2[0], &in_d2[1]);
    let bad = d2.path().join(failed.to_string());
    sim.inject(Fault::new(IoOp::ListDir, FaultKind::Eio).on_path(bad.to_str().unwrap()));
    let (mgr, _) = open();
    assert!(mgr.offline_dirs().iter().any(|(p, _)| p == d2.path()));
    assert!(mgr.get(failed).is_none(), "its load failed");
    assert!(
        mgr.offline_partitions()
            .iter()
            .any(|(tp, dir)| tp == failed && dir == d2.path()),
        "the manager knows the failed partition lives in the offline dir"
    );
    assert!(
        matches!(mgr.lookup(failed), Err(EngineError::LogDirOffline { .. })),
        "a lookup answers the storage error, not an unknown partition"
    );
    assert!(
        matches!(mgr.lookup(loaded), Err(EngineError::LogDirOffline { .. })),
        "so does one of a partition loaded before its dir failed"
    );
    let r = mgr.create(failed, TopicId([7; 16]), small_config());
    assert!(
        matches!(r, Err(EngineError::LogDirOffline { .. })),
        "created again in the online dir: {:?}",
        r.map(|h| h.data_dir().to_path_buf())
    );
    assert!(
        !d1.path().join(failed.to_string()).exists(),
        "no copy of the partition in the other dir"
    );
    mgr.shutdown().unwrap();

    // The disk works again: both copies would make the start fail; there is only d2's.
    let (mgr, report) = open();
    assert!(mgr.offline_dirs().is_empty());
    assert_eq!(report.logs, 4);
    assert_eq!(mgr.get(failed).unwrap().read().log_end_offset(), Offset(2));
    mgr.shutdown().unwrap();
}
