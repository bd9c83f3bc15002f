//! Bug: `LogManager::delete` renames the partition directory with `std::fs::rename` and then
//! removes `.log` files through the storage backend under the *new* name. A backend that keeps
//! `.log` files itself (the simulated one) still holds them under the old directory, so they are
//! never removed, and a partition re-created under the same name finds the deleted records.

use crate::common;

use common::*;
use mirrorlog_engine::log::LeaderOrigin;
use mirrorlog_engine::manager::{LogManager, LogManagerConfig};
use mirrorlog_index::{LeaderEpoch, Offset, TopicId, TopicPartition};
use mirrorlog_segment::io::{SimStorage, Storage};
use std::sync::Arc;

#[test]
fn a_recreated_partition_starts_empty_on_the_simulated_backend() {
    let d = tempfile::tempdir().unwrap();
    let mut cfg = LogManagerConfig::new(d.path());
    cfg.default_log_config = small_config();
    let storage: Arc<dyn Storage> = Arc::new(SimStorage::new());
    let (mgr, _) = LogManager::open(cfg, storage, clock()).unwrap();
    let a = TopicPartition {
        topic: "orders".into(),
        partition: 0,
    };
    let h = mgr.create(&a, TopicId([1; 16]), small_config()).unwrap();
    for _ in 0..5 {
        h.append_as_leader_durable(client_batch(2, T0), LeaderEpoch(0), LeaderOrigin::Client)
            .unwrap();
    }
    drop(h);
    mgr.delete(&a).unwrap();
    let h = mgr.create(&a, TopicId([2; 16]), small_config()).unwrap();
    assert_eq!(
        h.read().log_end_offset(),
        Offset(0),
        "the new partition is empty"
    );
}
