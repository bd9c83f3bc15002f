//! Bug: when the same partition directory exists in two data directories, `LogManager::open`
//! keeps whichever copy finished loading last (`logs.insert` over the other, manager.rs) and
//! silently ignores the other — which copy wins depends on recovery-thread timing, so a restart
//! can serve a different, older copy of the log. Kafka's `LogManager.loadLog` refuses to start:
//! "Duplicate log directories for <tp> are found in both <dir1> and <dir2>".

use crate::common;

use common::*;
use mirrorlog_engine::log::LeaderOrigin;
use mirrorlog_engine::manager::{LogManager, LogManagerConfig};
use mirrorlog_index::{LeaderEpoch, TopicId, TopicPartition};
use mirrorlog_segment::io::{PwriteStorage, Storage};
use std::sync::Arc;

#[test]
fn the_same_partition_in_two_data_dirs_is_refused() {
    let d1 = tempfile::tempdir().unwrap();
    let d2 = tempfile::tempdir().unwrap();
    let open = || {
        let mut cfg = LogManagerConfig::new(d1.path());
        cfg.data_dirs = vec![d1.path().to_path_buf(), d2.path().to_path_buf()];
        cfg.default_log_config = small_config();
        let storage: Arc<dyn Storage> = Arc::new(PwriteStorage::new());
        LogManager::open(cfg, storage, clock()).map(|(m, _)| m)
    };
    let mgr = open().unwrap();
    let tp = TopicPartition {
        topic: "orders".into(),
        partition: 0,
    };
    let h = mgr.create(&tp, TopicId([1; 16]), small_config()).unwrap();
    let home = h.data_dir().to_path_buf();
    h.append_as_leader_durable(client_batch(2, T0), LeaderEpoch(0), LeaderOrigin::Client)
        .unwrap();
    drop(h);
    mgr.shutdown().unwrap();
    // A second copy, e.g. left by an interrupted move between disks.
    let other = if home == d1.path() {
        d2.path()
    } else {
        d1.path()
    };
    let src = home.join("orders-0");
    let dst = other.join("orders-0");
    std::fs::create_dir(&dst).unwrap();
    for e in std::fs::read_dir(&src).unwrap() {
        let p = e.unwrap().path();
        std::fs::copy(&p, dst.join(p.file_name().unwrap())).unwrap();
    }
    assert!(
        open().is_err(),
        "two copies of orders-0: the open must fail rather than pick one"
    );
}
