//! A transaction coordinator on its own: a log manager on the pwrite backend and a manual clock,
//! and no group coordinator behind it.

use mirrorlog_broker::txn::TxnOffsetsSink;
use mirrorlog_engine::clock::ManualClock;
use mirrorlog_engine::manager::{LogManager, LogManagerConfig};
use mirrorlog_segment::io::PwriteStorage;
use std::path::Path;
use std::sync::Arc;

/// No group coordinator: transactional offsets go nowhere.
pub struct NoGroups;

impl TxnOffsetsSink for NoGroups {
    fn partition_for(&self, _group_id: &str) -> i32 {
        0
    }
    fn complete_txn(&self, _: i64, _: i16, _: bool, _: &[i32]) {}
}

/// A log manager on `dir` (the pwrite backend) and its manual clock, at `now_ms`.
pub fn manual_logs(dir: &Path, now_ms: i64) -> (Arc<LogManager>, Arc<ManualClock>) {
    let clock = ManualClock::new(now_ms);
    let (logs, _) = LogManager::open(
        LogManagerConfig::new(dir),
        Arc::new(PwriteStorage::new()),
        clock.clone(),
    )
    .unwrap();
    (Arc::new(logs), clock)
}
