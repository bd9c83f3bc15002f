//! AlterConfigs and IncrementalAlterConfigs of one topic, straight through the admin handlers.

use kafka_protocol::messages::{AlterConfigsRequest, IncrementalAlterConfigsRequest};
use kafka_protocol::protocol::StrBytes;
use mirrorlog_broker::broker::Broker;
use mirrorlog_broker::handlers::admin::{self, RESOURCE_TOPIC};

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

/// AlterConfigs `version` of `topic` with `configs` as its whole set of overrides:
/// (error code, message).
pub fn alter_configs(
    b: &Broker,
    topic: &str,
    configs: &[(&str, &str)],
    validate_only: bool,
    version: i16,
) -> (i16, Option<String>) {
    use kafka_protocol::messages::alter_configs_request::{AlterConfigsResource, AlterableConfig};
    let mut res = AlterConfigsResource::default();
    res.resource_type = RESOURCE_TOPIC;
    res.resource_name = s(topic);
    res.configs = configs
        .iter()
        .map(|(k, v)| {
            let mut c = AlterableConfig::default();
            c.name = s(k);
            c.value = Some(s(v));
            c
        })
        .collect();
    let mut r = AlterConfigsRequest::default();
    r.resources = vec![res];
    r.validate_only = validate_only;
    let out = &admin::alter_configs(b, r, version).responses[0];
    (
        out.error_code,
        out.error_message.as_ref().map(|m| m.to_string()),
    )
}

/// IncrementalAlterConfigs (v1) of `topic` with one operation `op` on `key`:
/// (error code, message).
pub fn incremental_alter(
    b: &Broker,
    topic: &str,
    key: &str,
    op: i8,
    value: Option<&str>,
) -> (i16, Option<String>) {
    use kafka_protocol::messages::incremental_alter_configs_request::{
        AlterConfigsResource, AlterableConfig,
    };
    let mut c = AlterableConfig::default();
    c.name = s(key);
    c.config_operation = op;
    c.value = value.map(s);
    let mut res = AlterConfigsResource::default();
    res.resource_type = RESOURCE_TOPIC;
    res.resource_name = s(topic);
    res.configs = vec![c];
    let mut r = IncrementalAlterConfigsRequest::default();
    r.resources = vec![res];
    let out = &admin::incremental_alter_configs(b, r, 1).responses[0];
    (
        out.error_code,
        out.error_message.as_ref().map(|m| m.to_string()),
    )
}

/// Creates topic `name` of `partitions` partitions with `configs` as its overrides through the
/// CreateTopics handler, and asserts it was created.
pub fn create_topic(b: &Broker, name: &str, partitions: i32, configs: &[(&str, &str)]) {
    use kafka_protocol::messages::create_topics_request::{CreatableTopic, CreatableTopicConfig};
    use kafka_protocol::messages::{CreateTopicsRequest, TopicName};
    let mut t = CreatableTopic::default();
    t.name = TopicName(s(name));
    t.num_partitions = partitions;
    t.replication_factor = 1;
    t.configs = configs
        .iter()
        .map(|(k, v)| {
            let mut c = CreatableTopicConfig::default();
            c.name = s(k);
            c.value = Some(s(v));
            c
        })
        .collect();
    let mut r = CreateTopicsRequest::default();
    r.topics = vec![t];
    r.timeout_ms = 30_000;
    let answer = admin::create_topics(b, r, 7);
    assert_eq!(answer.topics[0].error_code, 0, "create {name}: {answer:?}");
}

/// A DescribeConfigs entry's synonyms as (name, value, source), a null value as "".
pub fn synonyms(
    c: &kafka_protocol::messages::describe_configs_response::DescribeConfigsResourceResult,
) -> Vec<(String, String, i8)> {
    c.synonyms
        .iter()
        .map(|s| {
            (
                s.name.to_string(),
                s.value.as_ref().map(|v| v.to_string()).unwrap_or_default(),
                s.source,
            )
        })
        .collect()
}
