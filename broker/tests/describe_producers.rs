//! DescribeProducers (API 61, what the Java AdminClient's `describeProducers` sends): each
//! partition's producer state as Kafka's `UnifiedLog.activeProducers` reports it: an idempotent
//! producer's epoch and last sequence, a transactional producer's open transaction start, and
//! UNKNOWN_TOPIC_OR_PARTITION for a partition the broker does not have.

use crate::common;

use kafka_protocol::ResponseError;
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::describe_producers_request::TopicRequest;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use mirrorlog_broker::broker::Broker;
use mirrorlog_broker::handlers::{admin, offsets};
use mirrorlog_engine::log::LeaderOrigin;
use mirrorlog_index::{LeaderEpoch, ProducerEpoch, Sequence, TimestampMs};
use mirrorlog_segment::BatchBuilder;

const NOW_MS: i64 = 1_700_000_000_000;

/// (producer id, epoch, last sequence, last timestamp, coordinator epoch, transaction start).
type Described = (i64, i32, i32, i64, i32, i64);

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

/// Appends one batch of `n` records from producer `id` (epoch `epoch`, first sequence `seq`).
fn append(b: &Broker, id: i64, epoch: i16, seq: i32, n: usize, transactional: bool, ts: i64) {
    let mut batch = BatchBuilder::new()
        .producer(
            mirrorlog_index::ProducerId(id),
            ProducerEpoch(epoch),
            Sequence(seq),
        )
        .transactional(transactional);
    for _ in 0..n {
        batch.append(TimestampMs(ts), None, Some(b"v"), &[]);
    }
    b.partition("t", 0)
        .unwrap()
        .write()
        .append_as_leader(
            batch.build().into_bytes(),
            LeaderEpoch(0),
            LeaderOrigin::Client,
        )
        .unwrap();
}

#[test]
fn describe_producers_reports_each_partitions_producer_state() {
    let dir = tempfile::tempdir().unwrap();
    let b = common::plain_broker(dir.path(), NOW_MS);
    let mut t = CreatableTopic::default();
    t.name = TopicName(s("t"));
    t.num_partitions = 2;
    t.replication_factor = 1;
    let mut r = CreateTopicsRequest::default();
    r.topics = vec![t];
    assert_eq!(admin::create_topics(&b, r, 7).topics[0].error_code, 0);

    append(&b, 7, 2, 0, 3, false, NOW_MS - 10); // offsets 0..2, sequences 0..2
    append(&b, 7, 2, 3, 2, false, NOW_MS - 5); // offsets 3..4, sequences 3..4
    append(&b, 9, 0, 0, 2, true, NOW_MS); // an open transaction from offset 5

    let req = DescribeProducersRequest::default().with_topics(vec![
        TopicRequest::default()
            .with_name(TopicName(s("t")))
            .with_partition_indexes(vec![0, 1, 5]),
    ]);
    let resp = offsets::describe_producers(&b, req, 0);
    assert_eq!(resp.topics.len(), 1);
    let parts = &resp.topics[0].partitions;
    let got: Vec<(i32, i16, Vec<Described>)> = parts
        .iter()
        .map(|p| {
            (
                p.partition_index,
                p.error_code,
                p.active_producers
                    .iter()
                    .map(|a| {
                        (
                            a.producer_id.0,
                            a.producer_epoch,
                            a.last_sequence,
                            a.last_timestamp,
                            a.coordinator_epoch,
                            a.current_txn_start_offset,
                        )
                    })
                    .collect(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            (
                0,
                0,
                vec![(7, 2, 4, NOW_MS - 5, -1, -1), (9, 0, 1, NOW_MS, -1, 5)]
            ),
            (1, 0, vec![]),
            (5, ResponseError::UnknownTopicOrPartition.code(), vec![]),
        ]
    );
}
