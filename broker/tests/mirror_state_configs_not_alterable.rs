//! Bug: IncrementalAlterConfigs and the legacy AlterConfigs changed the configs of
//! `__mirror_state`, the mirror state store's own log, which clients may neither produce to nor
//! create, grow, delete or trim: a client's `max.message.bytes` or `segment.bytes` there fails or
//! reshapes the store's writes. Both are now refused with INVALID_CONFIG (validate_only too),
//! and the partition's config stays as it was.

use crate::common;

use kafka_protocol::ResponseError;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use mirrorlog_broker::broker::Broker;
use mirrorlog_broker::handlers::admin::{self, *};
use mirrorlog_index::{TopicId, TopicPartition};
use mirrorlog_mirror::state::MIRROR_STATE_TOPIC;

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

fn incremental(b: &Broker, validate_only: bool) -> i16 {
    use kafka_protocol::messages::incremental_alter_configs_request::{
        AlterConfigsResource, AlterableConfig,
    };
    let mut c = AlterableConfig::default();
    c.name = s("max.message.bytes");
    c.config_operation = OP_SET;
    c.value = Some(s("100"));
    let mut res = AlterConfigsResource::default();
    res.resource_type = RESOURCE_TOPIC;
    res.resource_name = s(MIRROR_STATE_TOPIC);
    res.configs = vec![c];
    let mut r = IncrementalAlterConfigsRequest::default();
    r.resources = vec![res];
    r.validate_only = validate_only;
    admin::incremental_alter_configs(b, r, 1).responses[0].error_code
}

fn legacy(b: &Broker) -> i16 {
    use kafka_protocol::messages::alter_configs_request::{AlterConfigsResource, AlterableConfig};
    let mut c = AlterableConfig::default();
    c.name = s("max.message.bytes");
    c.value = Some(s("100"));
    let mut res = AlterConfigsResource::default();
    res.resource_type = RESOURCE_TOPIC;
    res.resource_name = s(MIRROR_STATE_TOPIC);
    res.configs = vec![c];
    let mut r = AlterConfigsRequest::default();
    r.resources = vec![res];
    admin::alter_configs(b, r, 2).responses[0].error_code
}

#[test]
fn mirror_state_configs_cannot_be_altered() {
    let dir = tempfile::tempdir().unwrap();
    let b = common::plain_broker(dir.path(), 1_700_000_000_000);
    let tp = TopicPartition {
        topic: MIRROR_STATE_TOPIC.to_string(),
        partition: 0,
    };
    // As the mirror state store creates it: kept whole, never deleted by retention.
    let mut c = b.logs.default_log_config().clone();
    c.retention_ms = -1;
    c.retention_bytes = -1;
    b.logs.create(&tp, TopicId([9; 16]), c).unwrap();
    b.topics.refresh(&b.logs);
    let before = b.logs.get(&tp).unwrap().read().config().clone();

    let invalid = ResponseError::InvalidConfig.code();
    assert_eq!(incremental(&b, true), invalid, "validate_only");
    assert_eq!(incremental(&b, false), invalid, "IncrementalAlterConfigs");
    assert_eq!(legacy(&b), invalid, "AlterConfigs");
    assert_eq!(
        b.logs.get(&tp).unwrap().read().config(),
        &before,
        "the store's config is unchanged"
    );
}
