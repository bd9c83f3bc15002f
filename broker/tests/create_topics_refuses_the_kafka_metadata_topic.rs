//! Bug: CreateTopics of `__cluster_metadata` (Kafka's KRaft metadata log) with validate_only
//! was answered as creatable, and without it went through to the engine, which refuses to create
//! its directory, so the client was answered with a storage error. Kafka's controller (`ControllerApis.createTopics`) refuses the name itself:
//! INVALID_REQUEST, "Creation of internal topic __cluster_metadata is prohibited.", with
//! validate_only too, and the topics beside it in the request are created. The other topic
//! requests naming it answer as for any topic the cluster does not have
//! (UNKNOWN_TOPIC_OR_PARTITION), as Kafka's do.

use crate::common;

use kafka_protocol::ResponseError as E;
use kafka_protocol::messages::create_partitions_request::CreatePartitionsTopic;
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::delete_topics_request::DeleteTopicState;
use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use mirrorlog_broker::handlers::admin;

const METADATA_TOPIC: &str = "__cluster_metadata";

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

fn create(
    b: &mirrorlog_broker::broker::Broker,
    names: &[&str],
    validate_only: bool,
) -> Vec<(String, i16, Option<String>)> {
    let mut r = CreateTopicsRequest::default();
    r.topics = names
        .iter()
        .map(|n| {
            let mut t = CreatableTopic::default();
            t.name = TopicName(s(n));
            t.num_partitions = 1;
            t.replication_factor = 1;
            t
        })
        .collect();
    r.validate_only = validate_only;
    admin::create_topics(b, r, 7)
        .topics
        .iter()
        .map(|t| {
            (
                t.name.0.to_string(),
                t.error_code,
                t.error_message.as_ref().map(|m| m.to_string()),
            )
        })
        .collect()
}

#[test]
fn creating_the_kafka_metadata_topic_is_an_invalid_request() {
    let dir = tempfile::tempdir().unwrap();
    let b = common::plain_broker(dir.path(), 1_700_000_000_000);
    let refused = (
        METADATA_TOPIC.to_string(),
        E::InvalidRequest.code(),
        Some("Creation of internal topic __cluster_metadata is prohibited.".to_string()),
    );
    for validate_only in [true, false] {
        assert_eq!(
            create(&b, &[METADATA_TOPIC, "orders"], validate_only),
            [refused.clone(), ("orders".to_string(), 0, None)],
            "validate_only {validate_only}"
        );
    }
    assert!(b.topics.get(METADATA_TOPIC).is_none());
    assert!(b.topics.get("orders").is_some());

    // DeleteTopics, CreatePartitions and DescribeConfigs: a topic the broker does not have.
    let mut r = DeleteTopicsRequest::default();
    r.topics = vec![DeleteTopicState::default().with_name(Some(TopicName(s(METADATA_TOPIC))))];
    let resp = admin::delete_topics(&b, r, 6);
    assert_eq!(
        resp.responses[0].error_code,
        E::UnknownTopicOrPartition.code()
    );

    let mut r = CreatePartitionsRequest::default();

    r.timeout_ms = 30_000;
    r.topics = vec![
        CreatePartitionsTopic::default()
            .with_name(TopicName(s(METADATA_TOPIC)))
            .with_count(2),
    ];
    let resp = admin::create_partitions(&b, r, 3);
    assert_eq!(
        resp.results[0].error_code,
        E::UnknownTopicOrPartition.code()
    );

    let mut r = DescribeConfigsRequest::default();
    r.resources = vec![
        DescribeConfigsResource::default()
            .with_resource_type(2)
            .with_resource_name(s(METADATA_TOPIC)),
    ];
    let resp = admin::describe_configs(&b, r, 4);
    assert_eq!(
        resp.results[0].error_code,
        E::UnknownTopicOrPartition.code()
    );
}
