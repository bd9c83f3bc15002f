//! Bug: a Metadata request (v8+) asking for `include_topic_authorized_operations` got the topic
//! bit field only for the topics the broker has; a name it does not have (not auto-created) or an
//! invalid name was answered with -2147483648 ("not requested"). Kafka's
//! `handleTopicMetadataRequest` sets the field on every topic answered by name — found,
//! unknown, invalid or being auto-created — and, with no authorizer, to every operation a topic
//! supports; only an unknown topic id (v12) keeps the default.

use crate::common;

use kafka_protocol::ResponseError as E;
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use mirrorlog_broker::handlers::admin::{
    AUTHORIZED_OPERATIONS_OMITTED, TOPIC_AUTHORIZED_OPERATIONS,
};
use uuid::Uuid;

fn by_name(name: &str) -> MetadataRequestTopic {
    let mut t = MetadataRequestTopic::default();
    t.name = Some(TopicName(StrBytes::from_string(name.to_string())));
    t
}

#[test]
fn every_topic_answered_by_name_carries_the_operations_asked_for() {
    let dir = tempfile::tempdir().unwrap();
    let running = common::produce::running_with_topic(dir.path(), "orders", 1);
    for v in [8, 10, 12] {
        for include in [true, false] {
            let mut r = MetadataRequest::default();
            r.allow_auto_topic_creation = false;
            r.include_topic_authorized_operations = include;
            r.topics = Some(vec![
                by_name("orders"),
                by_name("missing"),
                by_name("bad name"),
            ]);
            let resp: MetadataResponse = common::wire::call(running.addr, ApiKey::Metadata, v, &r);
            let got: Vec<(String, i16, i32)> = resp
                .topics
                .iter()
                .map(|t| {
                    (
                        t.name.as_ref().unwrap().0.to_string(),
                        t.error_code,
                        t.topic_authorized_operations,
                    )
                })
                .collect();
            let ops = if include {
                TOPIC_AUTHORIZED_OPERATIONS
            } else {
                AUTHORIZED_OPERATIONS_OMITTED
            };
            assert_eq!(
                got,
                vec![
                    ("orders".to_string(), 0, ops),
                    (
                        "missing".to_string(),
                        E::UnknownTopicOrPartition.code(),
                        ops
                    ),
                    ("bad name".to_string(), E::InvalidTopicException.code(), ops),
                ],
                "v{v} include={include}"
            );
        }
    }
    // An unknown id is answered apart, without them (as Kafka's `unknownTopicIdsTopicMetadata`).
    let mut r = MetadataRequest::default();
    r.allow_auto_topic_creation = false;
    r.include_topic_authorized_operations = true;
    let mut t = MetadataRequestTopic::default();
    t.topic_id = Uuid::from_u128(7);
    r.topics = Some(vec![t]);
    let resp: MetadataResponse = common::wire::call(running.addr, ApiKey::Metadata, 12, &r);
    assert_eq!(resp.topics.len(), 1);
    assert_eq!(resp.topics[0].error_code, E::UnknownTopicId.code());
    assert_eq!(
        resp.topics[0].topic_authorized_operations,
        AUTHORIZED_OPERATIONS_OMITTED
    );
}
