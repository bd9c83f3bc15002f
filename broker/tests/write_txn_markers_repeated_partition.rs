//! Bug: WriteTxnMarkers (API 27) wrote one marker, each a durable append, per time a partition
//! was named in a marker: a request repeating one partition (a few bytes each) made the broker
//! append and sync that many control batches, and answered the partition as often. Kafka
//! collects a marker's partitions into a map: each is written and answered once. Now so here.

use crate::common;

use common::txn::{NoGroups, manual_logs};
use kafka_protocol::messages::write_txn_markers_request::{
    WritableTxnMarker, WritableTxnMarkerTopic,
};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use mirrorlog_broker::txn::{TxnConfig, TxnCoordinator};
use mirrorlog_engine::config::LogConfig;
use mirrorlog_index::{Offset, TopicId, TopicPartition};
use std::sync::Arc;

fn topic(name: &str, partitions: Vec<i32>) -> WritableTxnMarkerTopic {
    WritableTxnMarkerTopic::default()
        .with_name(TopicName(StrBytes::from_string(name.to_string())))
        .with_partition_indexes(partitions)
}

#[test]
fn a_partition_named_twice_in_a_marker_gets_one_marker() {
    let dir = tempfile::tempdir().unwrap();
    let (logs, clock) = manual_logs(dir.path(), 1_700_000_000_000);
    let mut handles = vec![];
    for p in 0..2 {
        let tp = TopicPartition {
            topic: "orders".into(),
            partition: p,
        };
        handles.push(
            logs.create(&tp, TopicId([3; 16]), LogConfig::default())
                .unwrap(),
        );
    }
    let txn = TxnCoordinator::open(logs, Arc::new(NoGroups), clock, TxnConfig::default()).unwrap();

    // Partition 0 three times (twice in one topic entry, once in a second entry of the same
    // topic), partition 1 once.
    let r = WriteTxnMarkersRequest::default().with_markers(vec![
        WritableTxnMarker::default()
            .with_producer_id(42.into())
            .with_producer_epoch(0)
            .with_transaction_result(false)
            .with_coordinator_epoch(0)
            .with_topics(vec![
                topic("orders", vec![0, 0]),
                topic("orders", vec![1, 0]),
            ]),
    ]);
    let ResponseKind::WriteTxnMarkers(resp) = txn.handle(1, RequestKind::WriteTxnMarkers(r)) else {
        panic!("not a WriteTxnMarkers response");
    };
    let answered: Vec<(String, i32, i16)> = resp.markers[0]
        .topics
        .iter()
        .flat_map(|t| {
            t.partitions
                .iter()
                .map(|p| (t.name.0.to_string(), p.partition_index, p.error_code))
        })
        .collect();
    assert_eq!(
        answered,
        [("orders".to_string(), 0, 0), ("orders".to_string(), 1, 0)],
        "each partition answered once"
    );
    assert_eq!(
        handles
            .iter()
            .map(|h| h.read().log_end_offset())
            .collect::<Vec<_>>(),
        [Offset(1), Offset(1)],
        "one ABORT marker in each partition"
    );
}
