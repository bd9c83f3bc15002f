//! A Metadata v12 request by topic id as Kafka's Java client sends it: each topic carries its id
//! and an empty name (the field's default), not a null one. Kafka answers such a request by id
//! (any non-zero id makes it one); answering the empty names as topic names gave topics with a
//! zero id, on which the Java AdminClient's `describeTopics(TopicCollection.ofTopicIds(..))`
//! failed with "Use errors() when managing topic using topic name".

use crate::common;

use kafka_protocol::ResponseError;
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use mirrorlog_broker::broker::Broker;
use mirrorlog_broker::handlers::admin;
use uuid::Uuid;

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

fn create(b: &Broker, name: &str, partitions: i32) {
    let mut t = CreatableTopic::default();
    t.name = TopicName(s(name));
    t.num_partitions = partitions;
    t.replication_factor = 1;
    let mut r = CreateTopicsRequest::default();
    r.topics = vec![t];
    r.timeout_ms = 1000;
    let resp = admin::create_topics(b, r, 7);
    assert_eq!(resp.topics[0].error_code, 0, "{:?}", resp.topics[0]);
}

fn by_id(id: Uuid, name: Option<&str>) -> MetadataRequestTopic {
    let mut t = MetadataRequestTopic::default();
    t.topic_id = id;
    t.name = name.map(|n| TopicName(s(n)));
    t
}

#[test]
fn a_request_by_topic_id_ignores_the_empty_names_beside_the_ids() {
    let dir = tempfile::tempdir().unwrap();
    let b = common::plain_broker(dir.path(), 1_700_000_000_000);
    create(&b, "alpha", 2);
    create(&b, "beta", 1);
    let alpha = b.topics.get("alpha").unwrap().id;
    let unknown = Uuid::from_u128(0x1234);

    let mut r = MetadataRequest::default();
    r.topics = Some(vec![by_id(alpha, Some("")), by_id(unknown, Some(""))]);
    r.allow_auto_topic_creation = false;
    let resp = admin::metadata(&b, r, 12);
    let got: Vec<(Option<&str>, Uuid, i16, usize)> = resp
        .topics
        .iter()
        .map(|t| {
            (
                t.name.as_ref().map(|n| n.0.as_str()),
                t.topic_id,
                t.error_code,
                t.partitions.len(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            (Some("alpha"), alpha, 0, 2),
            (None, unknown, ResponseError::UnknownTopicId.code(), 0)
        ],
        "answered by id, no topic named \"\""
    );

    // A name beside a non-zero id is ignored too (Kafka uses the ids only).
    let mut r = MetadataRequest::default();
    r.topics = Some(vec![by_id(alpha, Some("beta"))]);
    let resp = admin::metadata(&b, r, 12);
    assert_eq!(resp.topics.len(), 1);
    assert_eq!(resp.topics[0].topic_id, alpha);

    // Names alone (zero ids) are still a request by name.
    let mut r = MetadataRequest::default();
    r.topics = Some(vec![by_id(Uuid::nil(), Some("beta"))]);
    let resp = admin::metadata(&b, r, 12);
    assert_eq!(resp.topics.len(), 1);
    assert_eq!(resp.topics[0].name.as_ref().unwrap().0.as_str(), "beta");
    assert_eq!(resp.topics[0].error_code, 0);
}
