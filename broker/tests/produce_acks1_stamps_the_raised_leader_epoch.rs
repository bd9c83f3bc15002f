//! A Produce with `acks = 1` (or 0) must stamp its batch with the partition's leader epoch — the
//! one Metadata advertises and `acks = -1` stamps — even when that epoch was raised above the
//! epoch cache (a mirror's epoch bump, KIP-1279 §7; a truncation keeps it too). Stamping the
//! cache's latest epoch instead writes new records under the previous (source cluster's) epoch,
//! so epoch-based divergence detection cannot tell them from that epoch's records.

use bytes::Bytes;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{FetchRequest, MetadataRequest, ProduceRequest, TopicName};
use kafka_protocol::protocol::StrBytes;
use mirrorlog_broker::broker::{Broker, BrokerConfig};
use mirrorlog_broker::handlers::{admin, fetch, produce};
use mirrorlog_engine::clock::ManualClock;
use mirrorlog_engine::config::LogConfig;
use mirrorlog_index::{LeaderEpoch, TimestampMs};
use mirrorlog_segment::io::PwriteStorage;
use mirrorlog_segment::{BatchBuilder, Batches};
use std::sync::Arc;

const NOW: i64 = 1_700_000_000_000;

fn s(x: &str) -> StrBytes {
    StrBytes::from_string(x.to_string())
}

fn batch(tag: &str) -> Bytes {
    let mut bb = BatchBuilder::new();
    bb.append(TimestampMs(NOW), Some(b"k"), Some(tag.as_bytes()), &[]);
    bb.build().into_bytes()
}

fn produce_req(acks: i16, records: Bytes) -> ProduceRequest {
    let mut pd = PartitionProduceData::default();
    pd.index = 0;
    pd.records = Some(records);
    let mut t = TopicProduceData::default();
    t.name = TopicName(s("t"));
    t.partition_data = vec![pd];
    let mut r = ProduceRequest::default();
    r.acks = acks;
    r.timeout_ms = 30_000;
    r.topic_data = vec![t];
    r
}

/// The partition leader epoch of every batch of `t-0`.
fn batch_epochs(b: &Broker) -> Vec<i32> {
    let mut fp = FetchPartition::default();
    fp.partition = 0;
    fp.fetch_offset = 0;
    fp.partition_max_bytes = 1 << 20;
    let mut t = FetchTopic::default();
    t.topic = TopicName(s("t"));
    t.partitions = vec![fp];
    let mut r = FetchRequest::default();
    r.max_wait_ms = 0;
    r.min_bytes = 1;
    r.max_bytes = 1 << 20;
    r.session_epoch = -1;
    r.topics = vec![t];
    let resp = fetch::handle(b, r, 12);
    let d = &resp.responses[0].partitions[0];
    assert_eq!(d.error_code, 0);
    Batches::new(d.records.clone().unwrap())
        .map(|b| b.unwrap().partition_leader_epoch().get())
        .collect()
}

#[test]
fn acks_1_and_acks_all_stamp_the_advertised_leader_epoch() {
    let dir = tempfile::tempdir().unwrap();
    let b = Broker::open(
        BrokerConfig::new(dir.path(), "127.0.0.1", 9092),
        Arc::new(PwriteStorage::new()),
        ManualClock::new(NOW),
    )
    .unwrap();
    b.topics
        .create(&b.logs, "t", 1, LogConfig::default(), None)
        .unwrap();
    // The partition's leader epoch is raised above its (empty) epoch cache, as a mirror's
    // epoch bump does before the topic is stopped and becomes writable.
    let h = b.partition("t", 0).unwrap();
    h.write().raise_leader_epoch(LeaderEpoch(7));
    let meta = admin::metadata(&b, MetadataRequest::default().with_topics(None), 12);
    let advertised = meta.topics[0].partitions[0].leader_epoch;
    assert_eq!(advertised, 7);

    let r = produce::handle(&b, produce_req(1, batch("one")), 9).unwrap();
    assert_eq!(r.responses[0].partition_responses[0].error_code, 0);
    let r = produce::handle(&b, produce_req(-1, batch("all")), 9).unwrap();
    assert_eq!(r.responses[0].partition_responses[0].error_code, 0);

    assert_eq!(
        batch_epochs(&b),
        vec![advertised, advertised],
        "every batch carries the leader epoch Metadata advertises, whatever the acks"
    );
}
