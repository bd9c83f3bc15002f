//! A transaction coordinator on its own: a log manager on the pwrite backend and a manual clock,
//! and no group coordinator behind it.

use kafka_protocol::messages::add_partitions_to_txn_response::AddPartitionsToTxnTopicResult;
use kafka_protocol::messages::write_txn_markers_request::{
    WritableTxnMarker, WritableTxnMarkerTopic,
};
use kafka_protocol::messages::{RequestKind, ResponseKind, TopicName, WriteTxnMarkersRequest};
use kafka_protocol::protocol::StrBytes;
use mirrorlog_broker::txn::{TxnCoordinator, TxnOffsetsSink};
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

/// WriteTxnMarkers v1 of one ABORT marker for (`producer_id`, `epoch`), coordinator epoch 0, to
/// partition 0 of `topic`: the partition's error.
pub fn abort_marker(txn: &TxnCoordinator, topic: &str, producer_id: i64, epoch: i16) -> i16 {
    let r = WriteTxnMarkersRequest::default().with_markers(vec![
        WritableTxnMarker::default()
            .with_producer_id(producer_id.into())
            .with_producer_epoch(epoch)
            .with_transaction_result(false)
            .with_coordinator_epoch(0)
            .with_topics(vec![
                WritableTxnMarkerTopic::default()
                    .with_name(TopicName(StrBytes::from_string(topic.to_string())))
                    .with_partition_indexes(vec![0]),
            ]),
    ]);
    match txn.handle(1, RequestKind::WriteTxnMarkers(r)) {
        ResponseKind::WriteTxnMarkers(x) => x.markers[0].topics[0].partitions[0].error_code,
        other => panic!("{other:?}"),
    }
}

/// (topic, partition, error code) per partition of an AddPartitionsToTxn answer.
pub type PartitionResults = Vec<(String, i32, i16)>;

/// The per-partition results of an AddPartitionsToTxn answer, in its order.
pub fn flatten(results: &[AddPartitionsToTxnTopicResult]) -> PartitionResults {
    results
        .iter()
        .flat_map(|t| {
            t.results_by_partition.iter().map(|p| {
                (
                    t.name.0.to_string(),
                    p.partition_index,
                    p.partition_error_code,
                )
            })
        })
        .collect()
}
