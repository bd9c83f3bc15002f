//! Bug: DescribeProducers (API 61) answered a partition once per time the request named it,
//! each answer with the partition's whole producer list: a request repeating one partition of
//! many producers made a response many times its size. Each partition is now answered once,
//! the entries of one topic merged into one, as Kafka's results keyed by topic hold them.

use crate::common;

use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::describe_producers_request::TopicRequest;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use mirrorlog_broker::handlers::{admin, offsets};
use mirrorlog_engine::log::LeaderOrigin;
use mirrorlog_index::{LeaderEpoch, ProducerEpoch, Sequence, TimestampMs};
use mirrorlog_segment::BatchBuilder;

const NOW_MS: i64 = 1_700_000_000_000;

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

fn topic(partitions: Vec<i32>) -> TopicRequest {
    TopicRequest::default()
        .with_name(TopicName(s("t")))
        .with_partition_indexes(partitions)
}

#[test]
fn a_repeated_partition_is_answered_once() {
    let dir = tempfile::tempdir().unwrap();
    let b = common::plain_broker(dir.path(), NOW_MS);
    let mut t = CreatableTopic::default();
    t.name = TopicName(s("t"));
    t.num_partitions = 2;
    t.replication_factor = 1;
    let mut r = CreateTopicsRequest::default();
    r.topics = vec![t];
    assert_eq!(admin::create_topics(&b, r, 7).topics[0].error_code, 0);
    // Three idempotent producers on partition 0.
    for id in 1..=3 {
        let mut batch = BatchBuilder::new().producer(
            mirrorlog_index::ProducerId(id),
            ProducerEpoch(0),
            Sequence(0),
        );
        batch.append(TimestampMs(NOW_MS), None, Some(b"v"), &[]);
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

    let req = DescribeProducersRequest::default()
        .with_topics(vec![topic(vec![0, 0, 1, 0]), topic(vec![0, 1])]);
    let resp = offsets::describe_producers(&b, req, 0);
    let answered: Vec<(String, i32, usize)> = resp
        .topics
        .iter()
        .flat_map(|t| {
            t.partitions.iter().map(|p| {
                (
                    t.name.0.to_string(),
                    p.partition_index,
                    p.active_producers.len(),
                )
            })
        })
        .collect();
    assert_eq!(
        answered,
        [("t".to_string(), 0, 3), ("t".to_string(), 1, 0)],
        "each partition once, in one entry for the topic"
    );
}
