//! Bug: CreateTopics of `__consumer_offsets` or `__transaction_state`, which this broker's
//! coordinators create at start, was answered INVALID_REQUEST ("Creation of internal topic ...
//! is prohibited."). Kafka's controller refuses only `__cluster_metadata` by name; any other
//! existing topic, internal or not, is TOPIC_ALREADY_EXISTS ("Topic '...' already exists."),
//! validate_only or not — what tools creating a topic "if not exists" look for.

use crate::common;

use kafka_protocol::ResponseError as E;
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;

#[test]
fn an_existing_internal_topic_already_exists() {
    let dir = tempfile::tempdir().unwrap();
    let running = common::produce::running_with_topic(dir.path(), "orders", 1);
    let names = ["__consumer_offsets", "__transaction_state"];
    for name in names {
        assert!(running.broker.topics.get(name).is_some(), "{name} exists");
    }
    for validate_only in [true, false] {
        let mut r = CreateTopicsRequest::default();
        r.validate_only = validate_only;
        r.timeout_ms = 30_000;
        r.topics = names
            .iter()
            .map(|n| {
                let mut t = CreatableTopic::default();
                t.name = TopicName(StrBytes::from_string(n.to_string()));
                t.num_partitions = -1;
                t.replication_factor = -1;
                t
            })
            .collect();
        let resp: CreateTopicsResponse =
            common::wire::call(running.addr, ApiKey::CreateTopics, 7, &r);
        let got: Vec<(String, i16, String)> = resp
            .topics
            .iter()
            .map(|t| {
                (
                    t.name.0.to_string(),
                    t.error_code,
                    t.error_message.as_ref().unwrap().to_string(),
                )
            })
            .collect();
        let want: Vec<(String, i16, String)> = names
            .iter()
            .map(|n| {
                (
                    n.to_string(),
                    E::TopicAlreadyExists.code(),
                    format!("Topic '{n}' already exists."),
                )
            })
            .collect();
        assert_eq!(got, want, "validate_only={validate_only}");
    }
}
