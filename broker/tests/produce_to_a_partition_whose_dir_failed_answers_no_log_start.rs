//! Kafka's `ReplicaManager.appendToLocalLog` answers the failures it knows as
//! `UNKNOWN_LOG_APPEND_INFO` — log start offset −1 — among them `KafkaStorageException`, and
//! the partition's log start only for the others. mirrorlog told them apart by engine error and
//! answered the log start for an offline directory (`LogDirOffline`, KAFKA_STORAGE_ERROR too):
//! an `acks = -1` Produce whose sync failed, and every later one to the partition.

use crate::common;

use common::produce::{batch, request};
use kafka_protocol::ResponseError;
use mirrorlog_broker::broker::{Broker, BrokerConfig};
use mirrorlog_broker::handlers::produce;
use mirrorlog_engine::clock::ManualClock;
use mirrorlog_engine::config::LogConfig;
use mirrorlog_segment::io::{Fault, FaultKind, IoOp, SimStorage};
use std::sync::Arc;

const NOW_MS: i64 = 1_700_000_000_000;

/// A Produce v9 (`acks = -1`) of one record to `t-0`: its error code and log start offset.
fn produce(b: &Broker) -> (i16, i64) {
    let r = request(-1, vec![("t", 0, Some(batch(b"v")))]);
    let resp = produce::handle(b, r, 9).unwrap();
    let p = &resp.responses[0].partition_responses[0];
    (p.error_code, p.log_start_offset)
}

#[test]
fn every_storage_error_answers_log_start_minus_one() {
    let dir = tempfile::tempdir().unwrap();
    let sim = SimStorage::new();
    let b = Broker::open(
        BrokerConfig::new(dir.path(), "127.0.0.1", 9092),
        Arc::new(sim.clone()),
        ManualClock::new(NOW_MS),
    )
    .unwrap();
    b.topics
        .create(&b.logs, "t", 1, LogConfig::default(), None)
        .unwrap();
    assert_eq!(produce(&b), (0, 0));
    sim.inject(Fault::new(IoOp::SyncData, FaultKind::Eio).on_path("t-0"));
    let storage = ResponseError::KafkaStorageError.code();
    assert_eq!(produce(&b), (storage, -1), "the failed sync");
    assert_eq!(produce(&b), (storage, -1), "the directory it took offline");
    b.shutdown().ok();
}
