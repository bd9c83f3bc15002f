//! Bug: a Metadata request naming `__cluster_metadata` (Kafka's KRaft metadata log) with
//! auto-creation allowed tried to create it: the engine refuses that directory, so the client
//! was answered KAFKA_STORAGE_ERROR and the broker logged a warning. In Kafka the name is valid
//! and never in the metadata cache, so `AutoTopicCreationManager` forwards a CreateTopics to
//! the controller (which refuses it, logged at debug) and answers the Metadata request
//! UNKNOWN_TOPIC_OR_PARTITION, not internal; the other topics of the request are created.

use crate::common;

use kafka_protocol::ResponseError as E;
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use mirrorlog_broker::handlers::admin;

const METADATA_TOPIC: &str = "__cluster_metadata";

#[test]
fn metadata_with_auto_create_answers_the_kafka_metadata_topic_unknown() {
    let dir = tempfile::tempdir().unwrap();
    let b = common::plain_broker(dir.path(), 1_700_000_000_000);
    for v in [4, 9, 12] {
        let mut r = MetadataRequest::default();
        r.allow_auto_topic_creation = true;
        r.topics = Some(
            [METADATA_TOPIC, "orders"]
                .iter()
                .map(|n| {
                    let mut t = MetadataRequestTopic::default();
                    t.name = Some(TopicName(StrBytes::from_string(n.to_string())));
                    t
                })
                .collect(),
        );
        let resp = admin::metadata(&b, r, v);
        assert_eq!(resp.topics.len(), 2, "v{v}");
        let t = &resp.topics[0];
        assert_eq!(t.name.as_ref().unwrap().0.as_str(), METADATA_TOPIC, "v{v}");
        assert_eq!(t.error_code, E::UnknownTopicOrPartition.code(), "v{v}");
        assert!(!t.is_internal, "v{v}");
        assert!(t.partitions.is_empty(), "v{v}");
        let orders = &resp.topics[1];
        assert_eq!(orders.name.as_ref().unwrap().0.as_str(), "orders");
        assert_eq!(
            orders.error_code, 0,
            "v{v}: the topic beside it is auto-created"
        );
    }
    assert!(b.topics.get(METADATA_TOPIC).is_none());
    assert!(!dir.path().join(format!("{METADATA_TOPIC}-0")).exists());
}
