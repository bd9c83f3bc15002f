//! Raw Fetch requests for the incremental fetch session (KIP-227) tests.

use bytes::BytesMut;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{FetchRequest, FetchResponse, ProduceRequest, TopicName};
use kafka_protocol::protocol::{Encodable, StrBytes};
use mirrorlog_broker::broker::{Broker, BrokerConfig};
use mirrorlog_broker::handlers::{fetch, produce};
use mirrorlog_engine::clock::ManualClock;
use mirrorlog_engine::config::LogConfig;
use mirrorlog_segment::io::PwriteStorage;
use std::sync::Arc;

/// The manual clock's start.
pub const NOW: i64 = 1_700_000_000_000;

/// A broker on `config` (the pwrite backend, a manual clock at [`NOW`]) holding `topics`
/// (name, partition count).
pub fn broker_with(config: BrokerConfig, topics: &[(&str, i32)]) -> (Broker, Arc<ManualClock>) {
    let clock = ManualClock::new(NOW);
    let b = Broker::open(config, Arc::new(PwriteStorage::new()), clock.clone()).unwrap();
    for &(name, partitions) in topics {
        b.topics
            .create(&b.logs, name, partitions, LogConfig::default(), None)
            .unwrap();
    }
    (b, clock)
}

/// A non-waiting READ_UNCOMMITTED fetch by topic name (before v13) of `parts` (topic,
/// partition, fetch offset), with session `id` at `epoch`.
pub fn session_fetch(id: i32, epoch: i32, parts: &[(&str, i32, i64)]) -> FetchRequest {
    let mut r = FetchRequest::default();
    r.max_wait_ms = 0;
    r.min_bytes = 1;
    r.max_bytes = 50 << 20;
    r.session_id = id;
    r.session_epoch = epoch;
    for &(topic, partition, offset) in parts {
        let mut p = FetchPartition::default();
        p.partition = partition;
        p.fetch_offset = offset;
        p.partition_max_bytes = 1 << 20;
        match r.topics.last_mut() {
            Some(t) if t.topic.0.as_str() == topic => t.partitions.push(p),
            _ => {
                let mut t = FetchTopic::default();
                t.topic = TopicName(StrBytes::from_string(topic.to_string()));
                t.partitions.push(p);
                r.topics.push(t);
            }
        }
    }
    r
}

/// Answers `r` at version `v`, checking that the answer encodes at that version.
pub fn fetch_at(b: &Broker, r: FetchRequest, v: i16) -> FetchResponse {
    let resp = fetch::handle(b, r, v);
    resp.encode(&mut BytesMut::new(), v)
        .expect("the response encodes at its version");
    resp
}

/// (topic, partition) of every partition an answer lists, in order.
pub fn listed(resp: &FetchResponse) -> Vec<(String, i32)> {
    resp.responses
        .iter()
        .flat_map(|t| {
            t.partitions
                .iter()
                .map(move |p| (t.topic.0.to_string(), p.partition_index))
        })
        .collect()
}

/// `r` naming each of its topics by the id the registry holds now (v13+), as a client that
/// resolved the ids from its metadata.
pub fn by_topic_id(b: &Broker, mut r: FetchRequest) -> FetchRequest {
    for t in &mut r.topics {
        t.topic_id = b.topics.get(t.topic.0.as_str()).expect("a known topic").id;
    }
    r
}

/// Appends one record (`records`) to partition 0 of `topic`.
pub fn produce_one(b: &Broker, topic: &str, records: bytes::Bytes) {
    let mut pd = PartitionProduceData::default();
    pd.index = 0;
    pd.records = Some(records);
    let mut t = TopicProduceData::default();
    t.name = TopicName(StrBytes::from_string(topic.to_string()));
    t.partition_data.push(pd);
    let mut r = ProduceRequest::default();
    r.acks = 1;
    r.timeout_ms = 30_000;
    r.topic_data.push(t);
    let resp = produce::handle(b, r, 9).unwrap();
    assert_eq!(resp.responses[0].partition_responses[0].error_code, 0);
}
