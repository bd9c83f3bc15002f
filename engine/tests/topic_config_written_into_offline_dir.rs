//! Bug: `keep_every_record` (run by every coordinator at start) and `update_config`
//! (IncrementalAlterConfigs) rewrote `topic.config` of a partition whose data directory is
//! offline: Kafka writes nothing into an offline log dir, and answers KAFKA_STORAGE_ERROR.

use crate::common;

use common::*;
use mirrorlog_engine::error::EngineError;
use mirrorlog_engine::manager::TOPIC_CONFIG_FILE;
use mirrorlog_index::TopicId;
use mirrorlog_segment::io::{Fault, FaultKind, IoOp};

#[test]
fn topic_config_is_not_written_into_an_offline_dir() {
    let dirs = TwoDirSim::new();
    let (d2, sim) = (&dirs.d2, &dirs.sim);
    let open = || dirs.open();
    let (mgr, _) = open();
    let mut in_d2 = vec![];
    for p in 0..4 {
        let tp = orders(p);
        let h = mgr.create(&tp, TopicId([7; 16]), small_config()).unwrap();
        if h.data_dir() == d2.path() {
            in_d2.push(tp);
        }
    }
    mgr.shutdown().unwrap();
    let (loaded, failed) = (&in_d2[0], &in_d2[1]);
    let bad = d2.path().join(failed.to_string());
    sim.inject(Fault::new(IoOp::ListDir, FaultKind::Eio).on_path(bad.to_str().unwrap()));
    let (mgr, _) = open();
    assert!(mgr.offline_dirs().iter().any(|(p, _)| p == d2.path()));
    let file = d2.path().join(loaded.to_string()).join(TOPIC_CONFIG_FILE);
    let before = sim.file_bytes(&file);
    assert!(before.is_some(), "topic.config is in the storage");

    let r = mgr.keep_every_record(loaded);
    assert!(
        matches!(r, Err(EngineError::LogDirOffline { .. })),
        "keep_every_record in an offline dir: {r:?}"
    );
    let mut cfg = small_config();
    cfg.retention_ms = 12_345;
    let r = mgr.update_config(loaded, cfg.clone());
    assert!(
        matches!(r, Err(EngineError::LogDirOffline { .. })),
        "update_config in an offline dir: {r:?}"
    );
    assert_eq!(sim.file_bytes(&file), before, "topic.config untouched");
    let r = mgr.update_config(failed, cfg);
    assert!(
        matches!(r, Err(EngineError::LogDirOffline { .. })),
        "update_config of a partition that failed to load: {r:?}"
    );
    mgr.shutdown().unwrap();
}
