//! A Metadata request before v12 that names a topic by id (v10–11 carry the field) or leaves a
//! topic name null is refused whole, as Kafka's `handleTopicMetadataRequest` does (it throws
//! `InvalidRequestException` before looking at any topic; `MetadataRequest.getErrorResponse`
//! answers): every requested topic, in order, `INVALID_REQUEST` with its name ("" for a null
//! one) and id and no partitions, and no brokers, cluster id or controller.
//!
//! Bug: a v10–11 topic carrying both a name and an id was answered by its name (the id
//! ignored), and a null name was refused alone while the request's other topics were
//! answered.

use kafka_protocol::ResponseError;
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use mirrorlog_broker::broker::{Broker, BrokerConfig};
use mirrorlog_broker::handlers::admin;
use mirrorlog_engine::clock::ManualClock;
use mirrorlog_segment::io::PwriteStorage;
use std::sync::Arc;
use uuid::Uuid;

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

fn topic(name: Option<&str>, id: Uuid) -> MetadataRequestTopic {
    let mut t = MetadataRequestTopic::default();
    t.topic_id = id;
    t.name = name.map(|n| TopicName(s(n)));
    t
}

type Answer = (Option<String>, Uuid, i16, usize);

fn ask(b: &Broker, v: i16, topics: Vec<MetadataRequestTopic>) -> (MetadataResponse, Vec<Answer>) {
    let mut r = MetadataRequest::default();
    r.topics = Some(topics);
    r.allow_auto_topic_creation = false;
    let resp = admin::metadata(b, r, v);
    let got = resp
        .topics
        .iter()
        .map(|t| {
            (
                t.name.as_ref().map(|n| n.0.to_string()),
                t.topic_id,
                t.error_code,
                t.partitions.len(),
            )
        })
        .collect();
    (resp, got)
}

#[test]
fn a_metadata_request_before_v12_with_a_topic_id_or_a_null_name_is_refused_whole() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = BrokerConfig::new(dir.path(), "127.0.0.1", 9092);
    config.cluster_id = Some("test-cluster".into());
    let b = Broker::open(
        config,
        Arc::new(PwriteStorage::new()),
        ManualClock::new(1_700_000_000_000),
    )
    .unwrap();
    let mut t = CreatableTopic::default();
    t.name = TopicName(s("alpha"));
    t.num_partitions = 2;
    t.replication_factor = 1;
    let mut r = CreateTopicsRequest::default();
    r.topics = vec![t];
    assert_eq!(admin::create_topics(&b, r, 7).topics[0].error_code, 0);
    let alpha = b.topics.get("alpha").unwrap().id;
    let invalid = ResponseError::InvalidRequest.code();

    for v in [10, 11] {
        // Named by both name and id, beside a topic named alone.
        let (resp, got) = ask(
            &b,
            v,
            vec![
                topic(Some("beta"), Uuid::nil()),
                topic(Some("alpha"), alpha),
            ],
        );
        assert_eq!(
            got,
            [
                (Some("beta".into()), Uuid::nil(), invalid, 0),
                (Some("alpha".into()), alpha, invalid, 0)
            ],
            "v{v}"
        );
        assert!(resp.brokers.is_empty(), "v{v}: {resp:?}");
        assert_eq!(
            (resp.controller_id.0, resp.cluster_id.is_none()),
            (-1, true)
        );
        // A null name beside a valid one.
        let (_, got) = ask(
            &b,
            v,
            vec![topic(Some("alpha"), Uuid::nil()), topic(None, Uuid::nil())],
        );
        assert_eq!(
            got,
            [
                (Some("alpha".into()), Uuid::nil(), invalid, 0),
                (Some(String::new()), Uuid::nil(), invalid, 0)
            ],
            "v{v}"
        );
    }
    // The same request at v12 is one by id: answered.
    let (resp, got) = ask(&b, 12, vec![topic(Some("alpha"), alpha)]);
    assert_eq!(got, [(Some("alpha".into()), alpha, 0, 2)]);
    assert_eq!(resp.brokers.len(), 1);
    // A request by name alone before v12 is answered.
    let (_, got) = ask(&b, 11, vec![topic(Some("alpha"), Uuid::nil())]);
    assert_eq!(got, [(Some("alpha".into()), alpha, 0, 2)]);
    b.shutdown().unwrap();
}
