//! Bug: `LogManager::checkpoint` writes every offset checkpoint through one fixed
//! `<name>.tmp` path and nothing serialises its callers. `maintain` (the periodic upkeep),
//! `delete` (DeleteTopics), DeleteRecords and `checkpoint_after_flush` all call it, from
//! different threads: one caller renames the `.tmp` away under the other, whose rename then
//! fails with ENOENT (a topic deletion reported as a storage error after its directory was
//! removed), or one truncates and rewrites the `.tmp` while the other is writing it, and a
//! mixture of the two is renamed into place as the checkpoint.

use crate::common;

use common::*;
use mirrorlog_engine::manager::{LogManager, LogManagerConfig};
use mirrorlog_index::{TopicId, TopicPartition};
use mirrorlog_segment::io::{PwriteStorage, Storage};
use std::sync::{Arc, Barrier};

#[test]
fn concurrent_checkpoints_all_succeed() {
    let d = tempfile::tempdir().unwrap();
    let mut cfg = LogManagerConfig::new(d.path());
    cfg.default_log_config = small_config();
    let storage: Arc<dyn Storage> = Arc::new(PwriteStorage::new());
    let (mgr, _) = LogManager::open(cfg, storage, clock()).unwrap();
    for p in 0..8 {
        let tp = TopicPartition {
            topic: "t".into(),
            partition: p,
        };
        mgr.create(&tp, TopicId([1; 16]), small_config()).unwrap();
    }
    const THREADS: usize = 4;
    const ROUNDS: usize = 50;
    let start = Barrier::new(THREADS);
    let failures: Vec<String> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..THREADS)
            .map(|_| {
                s.spawn(|| {
                    start.wait();
                    (0..ROUNDS)
                        .filter_map(|_| mgr.checkpoint().err().map(|e| e.to_string()))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().unwrap())
            .collect()
    });
    assert!(
        failures.is_empty(),
        "{} of {} concurrent checkpoints failed, first: {}",
        failures.len(),
        THREADS * ROUNDS,
        failures[0]
    );
}
