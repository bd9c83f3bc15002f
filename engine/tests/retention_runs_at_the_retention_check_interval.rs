//! `log.retention.check.interval.ms` (default 300000) and `log.initial.task.delay.ms` (30000):
//! Kafka's `LogManager` runs `cleanupLogs` that often, the first time that long after start.
//! `LogManager::maintain`, which the broker calls every 5 s, applied retention at every call: a
//! topic's records past `retention.ms` (a client's old timestamps) went within seconds of
//! being written, where Kafka keeps them until its next check.

use crate::common;

use common::*;
use mirrorlog_engine::log::LeaderOrigin;
use mirrorlog_engine::manager::{LogManager, LogManagerConfig};
use mirrorlog_index::{LeaderEpoch, Offset, TopicId};
use mirrorlog_segment::io::{PwriteStorage, Storage};
use std::sync::Arc;

#[test]
fn retention_waits_for_the_initial_delay_then_runs_at_each_interval() {
    let d = tempfile::tempdir().unwrap();
    let clk = clock();
    let mut cfg = LogManagerConfig::new(d.path());
    assert_eq!(
        (cfg.retention_check_interval_ms, cfg.initial_task_delay_ms),
        (300_000, 30_000),
        "Kafka's defaults"
    );
    let mut c = small_config();
    c.retention_ms = 1000;
    c.file_delete_delay_ms = 0;
    cfg.default_log_config = c.clone();
    let storage: Arc<dyn Storage> = Arc::new(PwriteStorage::new());
    let mgr = LogManager::open(cfg, storage, clk.clone()).unwrap().0;
    let h = mgr.create(&orders(0), TopicId([7; 16]), c).unwrap();
    let append_old = || {
        let mut log = h.write();
        log.append_as_leader(
            client_batch(3, T0 - 10_000),
            LeaderEpoch(0),
            LeaderOrigin::Client,
        )
        .unwrap();
        let leo = log.log_end_offset();
        log.update_high_watermark(leo);
        leo
    };
    let leo = append_old();
    assert_eq!(mgr.maintain().unwrap(), 0, "not before the initial delay");
    clk.advance(29_999);
    assert_eq!(mgr.maintain().unwrap(), 0, "not before the initial delay");
    clk.advance(1);
    assert_eq!(mgr.maintain().unwrap(), 1, "the first check");
    assert_eq!(h.read().log_start_offset(), leo);
    let leo = append_old();
    clk.advance(299_999);
    assert_eq!(mgr.maintain().unwrap(), 0, "not before the interval");
    assert_eq!(h.read().log_start_offset(), Offset(3));
    clk.advance(1);
    assert_eq!(mgr.maintain().unwrap(), 1, "the next check");
    assert_eq!(h.read().log_start_offset(), leo);
}
