//! Bug: a Metadata request with auto-creation allowed naming a topic that collides with an
//! existing one once `.` and `_` are alike (`a_b` beside `a.b`) was answered
//! INVALID_TOPIC_EXCEPTION, with a warning logged, so a producer gave up on the topic at once.
//! In Kafka the name passes the broker's `Topic.validate`, so `AutoTopicCreationManager` sends
//! the creation to the controller (which refuses the collision; logged at debug) and answers
//! the Metadata request UNKNOWN_TOPIC_OR_PARTITION, not internal, with no partitions; nothing
//! is created, and the topic beside it in the request is.

use crate::common;

use kafka_protocol::ResponseError as E;
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;

#[test]
fn auto_creating_a_colliding_name_answers_unknown_and_creates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let running = common::produce::running_with_topic(dir.path(), "a.b", 1);
    for v in [4, 9, 12] {
        let mut r = MetadataRequest::default();
        r.allow_auto_topic_creation = true;
        r.topics = Some(
            ["a_b", "fresh"]
                .iter()
                .map(|n| {
                    let mut t = MetadataRequestTopic::default();
                    t.name = Some(TopicName(StrBytes::from_string(n.to_string())));
                    t
                })
                .collect(),
        );
        let resp: MetadataResponse = common::wire::call(running.addr, ApiKey::Metadata, v, &r);
        assert_eq!(resp.topics.len(), 2, "v{v}");
        let t = &resp.topics[0];
        assert_eq!(t.name.as_ref().unwrap().0.as_str(), "a_b", "v{v}");
        assert_eq!(t.error_code, E::UnknownTopicOrPartition.code(), "v{v}");
        assert!(!t.is_internal, "v{v}");
        assert!(t.partitions.is_empty(), "v{v}");
        let fresh = &resp.topics[1];
        assert_eq!(fresh.name.as_ref().unwrap().0.as_str(), "fresh", "v{v}");
        assert_eq!(fresh.error_code, 0, "v{v}: the topic beside it is created");
    }
    let b = &running.broker;
    assert!(b.topics.get("a_b").is_none());
    assert!(b.topics.get("a.b").is_some());
}
