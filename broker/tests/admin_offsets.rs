//! The metadata, admin and offset handlers, called directly on a `Broker` with the wire structs.
//! Every response is also encoded at the version it answers, so a field set outside its version
//! range fails the test.

use bytes::BytesMut;
use kafka_protocol::ResponseError;
use kafka_protocol::messages::create_partitions_request::{
    CreatePartitionsAssignment, CreatePartitionsTopic,
};
use kafka_protocol::messages::create_topics_request::{
    CreatableReplicaAssignment, CreatableTopic, CreatableTopicConfig,
};
use kafka_protocol::messages::delete_records_request::{
    DeleteRecordsPartition, DeleteRecordsTopic,
};
use kafka_protocol::messages::delete_topics_request::DeleteTopicState;
use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
use kafka_protocol::messages::incremental_alter_configs_request::{
    AlterConfigsResource, AlterableConfig,
};
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::offset_for_leader_epoch_request::{
    OffsetForLeaderPartition, OffsetForLeaderTopic,
};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::{Encodable, StrBytes};
use mirrorlog_broker::broker::{Broker, BrokerConfig};
use mirrorlog_broker::handlers::admin::{self, *};
use mirrorlog_broker::handlers::offsets;
use mirrorlog_engine::clock::ManualClock;
use mirrorlog_engine::config::LogConfig;
use mirrorlog_engine::log::LeaderOrigin;
use mirrorlog_index::{LeaderEpoch, Offset, TimestampMs};
use mirrorlog_segment::BatchBuilder;
use mirrorlog_segment::io::PwriteStorage;
use std::path::Path;
use std::sync::Arc;
use uuid::Uuid;

const NOW_MS: i64 = 1_700_000_000_000;

fn open_with(dir: &Path, tweak: impl FnOnce(&mut BrokerConfig)) -> Broker {
    let mut config = BrokerConfig::new(dir, "127.0.0.1", 9092);
    config.cluster_id = Some("test-cluster".into());
    tweak(&mut config);
    Broker::open(
        config,
        Arc::new(PwriteStorage::new()),
        ManualClock::new(NOW_MS),
    )
    .expect("open broker")
}

fn open(dir: &Path) -> Broker {
    open_with(dir, |_| {})
}

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

fn tn(v: &str) -> TopicName {
    TopicName(s(v))
}

fn str_of(v: &StrBytes) -> &str {
    v.as_str()
}

/// Encodes `m` at `version`; panics if a field is set that the version does not carry.
fn encodes<M: Encodable>(m: &M, version: i16) {
    let mut buf = BytesMut::new();
    m.encode(&mut buf, version)
        .unwrap_or_else(|e| panic!("encode v{version}: {e}"));
}

fn code(e: ResponseError) -> i16 {
    e.code()
}

// ---- request builders ----------------------------------------------------------------------

fn new_topic(
    name: &str,
    partitions: i32,
    rf: i16,
    configs: &[(&str, Option<&str>)],
) -> CreatableTopic {
    let mut t = CreatableTopic::default();
    t.name = tn(name);
    t.num_partitions = partitions;
    t.replication_factor = rf;
    t.configs = configs
        .iter()
        .map(|(k, v)| {
            let mut c = CreatableTopicConfig::default();
            c.name = s(k);
            c.value = v.map(s);
            c
        })
        .collect();
    t
}

fn create_req(topics: Vec<CreatableTopic>, validate_only: bool) -> CreateTopicsRequest {
    let mut r = CreateTopicsRequest::default();
    r.topics = topics;
    r.validate_only = validate_only;
    r.timeout_ms = 1000;
    r
}

fn create(b: &Broker, name: &str, partitions: i32) {
    let resp = admin::create_topics(
        b,
        create_req(vec![new_topic(name, partitions, 1, &[])], false),
        7,
    );
    assert_eq!(
        resp.topics[0].error_code, 0,
        "{:?}",
        resp.topics[0].error_message
    );
}

fn metadata_req(topics: Option<&[&str]>) -> MetadataRequest {
    let mut r = MetadataRequest::default();
    r.topics = topics.map(|t| {
        t.iter()
            .map(|n| {
                let mut m = MetadataRequestTopic::default();
                m.name = Some(tn(n));
                m
            })
            .collect()
    });
    r
}

fn describe_req(resource_type: i8, name: &str, keys: Option<&[&str]>) -> DescribeConfigsRequest {
    let mut res = DescribeConfigsResource::default();
    res.resource_type = resource_type;
    res.resource_name = s(name);
    res.configuration_keys = keys.map(|k| k.iter().map(|k| s(k)).collect());
    let mut r = DescribeConfigsRequest::default();
    r.resources = vec![res];
    r
}

fn alter_req(
    topic: &str,
    ops: &[(&str, i8, Option<&str>)],
    validate_only: bool,
) -> IncrementalAlterConfigsRequest {
    let mut res = AlterConfigsResource::default();
    res.resource_type = RESOURCE_TOPIC;
    res.resource_name = s(topic);
    res.configs = ops
        .iter()
        .map(|(k, op, v)| {
            let mut c = AlterableConfig::default();
            c.name = s(k);
            c.config_operation = *op;
            c.value = v.map(s);
            c
        })
        .collect();
    let mut r = IncrementalAlterConfigsRequest::default();
    r.resources = vec![res];
    r.validate_only = validate_only;
    r
}

/// (value, source) of `key` in a topic's DescribeConfigs.
fn topic_config(b: &Broker, topic: &str, key: &str) -> (String, i8) {
    let resp = admin::describe_configs(b, describe_req(RESOURCE_TOPIC, topic, Some(&[key])), 4);
    let r = &resp.results[0];
    assert_eq!(r.error_code, 0, "{:?}", r.error_message);
    assert_eq!(r.configs.len(), 1);
    let c = &r.configs[0];
    (
        str_of(c.value.as_ref().unwrap()).to_string(),
        c.config_source,
    )
}

fn list_req(topic: &str, partition: i32, timestamp: i64) -> ListOffsetsRequest {
    let mut p = ListOffsetsPartition::default();
    p.partition_index = partition;
    p.timestamp = timestamp;
    p.current_leader_epoch = -1;
    let mut t = ListOffsetsTopic::default();
    t.name = tn(topic);
    t.partitions = vec![p];
    let mut r = ListOffsetsRequest::default();
    r.replica_id = BrokerId(-1);
    r.topics = vec![t];
    r
}

/// (error, offset, timestamp, leader epoch) of a one-partition ListOffsets.
fn list(b: &Broker, r: ListOffsetsRequest, v: i16) -> (i16, i64, i64, i32) {
    let resp = offsets::list_offsets(b, r, v);
    encodes(&resp, v);
    let p = &resp.topics[0].partitions[0];
    (p.error_code, p.offset, p.timestamp, p.leader_epoch)
}

/// Appends one batch of records with these timestamps in `epoch`; returns its first offset.
fn append(b: &Broker, topic: &str, epoch: i32, timestamps: &[i64]) -> i64 {
    let mut builder = BatchBuilder::new();
    for ts in timestamps {
        builder.append(TimestampMs(*ts), None, Some(b"value"), &[]);
    }
    let h = b.partition(topic, 0).expect("partition");
    let mut log = h.write();
    let info = log
        .append_as_leader(
            builder.build().into_bytes(),
            LeaderEpoch(epoch),
            LeaderOrigin::Client,
        )
        .expect("append");
    info.first_offset.get()
}

fn set_hw(b: &Broker, topic: &str, hw: i64) {
    let h = b.partition(topic, 0).unwrap();
    h.write().update_high_watermark(Offset(hw));
}

// ---- Metadata --------------------------------------------------------------------------------

#[test]
fn metadata_lists_all_none_or_the_named_topics() {
    let dir = tempfile::tempdir().unwrap();
    let b = open(dir.path());
    create(&b, "alpha", 2);
    create(&b, "beta", 1);

    // v1+: null = all, empty = none; v0: empty = all.
    let all = admin::metadata(&b, metadata_req(None), 12);
    let names: Vec<&str> = all
        .topics
        .iter()
        .map(|t| str_of(&t.name.as_ref().unwrap().0))
        .collect();
    assert_eq!(names, ["alpha", "beta"]);
    let none = admin::metadata(&b, metadata_req(Some(&[])), 1);
    assert!(none.topics.is_empty());
    let all_v0 = admin::metadata(&b, metadata_req(Some(&[])), 0);
    assert_eq!(all_v0.topics.len(), 2);

    let resp = admin::metadata(&b, metadata_req(Some(&["alpha"])), 12);
    assert_eq!(resp.brokers.len(), 1);
    assert_eq!(resp.brokers[0].node_id.0, 1);
    assert_eq!(str_of(&resp.brokers[0].host), "127.0.0.1");
    assert_eq!(resp.brokers[0].port, 9092);
    assert_eq!(resp.brokers[0].rack, None);
    assert_eq!(resp.cluster_id.as_ref().map(str_of), Some("test-cluster"));
    assert_eq!(resp.controller_id.0, 1);
    let t = &resp.topics[0];
    assert_eq!(t.error_code, 0);
    assert_eq!(t.topic_id, b.topics.get("alpha").unwrap().id);
    assert!(!t.is_internal);
    assert_eq!(t.topic_authorized_operations, AUTHORIZED_OPERATIONS_OMITTED);
    assert_eq!(t.partitions.len(), 2);
    for (i, p) in t.partitions.iter().enumerate() {
        assert_eq!(p.error_code, 0);
        assert_eq!(p.partition_index, i as i32);
        assert_eq!(p.leader_id.0, 1);
        assert_eq!(p.leader_epoch, 0);
        assert_eq!(p.replica_nodes, vec![BrokerId(1)]);
        assert_eq!(p.isr_nodes, vec![BrokerId(1)]);
        assert!(p.offline_replicas.is_empty());
    }
    for v in 0..=12 {
        encodes(&admin::metadata(&b, metadata_req(Some(&["alpha"])), v), v);
        encodes(&admin::metadata(&b, metadata_req(None), v), v);
    }
}

#[test]
fn metadata_reports_authorized_operations_only_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    let b = open(dir.path());
    create(&b, "alpha", 1);
    let mut r = metadata_req(Some(&["alpha"]));
    r.include_topic_authorized_operations = true;
    r.include_cluster_authorized_operations = true;
    let resp = admin::metadata(&b, r.clone(), 8);
    assert_eq!(
        resp.topics[0].topic_authorized_operations,
        TOPIC_AUTHORIZED_OPERATIONS
    );
    assert_eq!(
        resp.cluster_authorized_operations,
        CLUSTER_AUTHORIZED_OPERATIONS
    );
    encodes(&resp, 8);
    // v11+ has no cluster operations field; the topic one stays.
    let resp = admin::metadata(&b, r, 12);
    assert_eq!(
        resp.cluster_authorized_operations,
        AUTHORIZED_OPERATIONS_OMITTED
    );
    assert_eq!(
        resp.topics[0].topic_authorized_operations,
        TOPIC_AUTHORIZED_OPERATIONS
    );
    encodes(&resp, 12);
}

#[test]
fn metadata_auto_creates_unknown_topics_when_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let b = open_with(dir.path(), |c| c.num_partitions = 3);

    let resp = admin::metadata(&b, metadata_req(Some(&["fresh"])), 9);
    let t = &resp.topics[0];
    assert_eq!(t.error_code, 0);
    assert_eq!(t.partitions.len(), 3);
    assert!(
        t.partitions
            .iter()
            .all(|p| p.error_code == 0 && p.leader_id.0 == 1)
    );
    assert_eq!(b.topics.get("fresh").unwrap().partitions, 3);
    assert!(b.partition("fresh", 2).is_some());

    // v4+: the request may forbid it.
    let mut r = metadata_req(Some(&["forbidden"]));
    r.allow_auto_topic_creation = false;
    let resp = admin::metadata(&b, r, 9);
    assert_eq!(
        resp.topics[0].error_code,
        code(ResponseError::UnknownTopicOrPartition)
    );
    assert!(b.topics.get("forbidden").is_none());

    // Invalid names are INVALID_TOPIC_EXCEPTION whatever the setting.
    let resp = admin::metadata(&b, metadata_req(Some(&["bad name!"])), 9);
    assert_eq!(
        resp.topics[0].error_code,
        code(ResponseError::InvalidTopicException)
    );
    encodes(&resp, 9);

    // Internal topics belong to their coordinators.
    let resp = admin::metadata(&b, metadata_req(Some(&["__consumer_offsets"])), 9);
    assert_eq!(
        resp.topics[0].error_code,
        code(ResponseError::UnknownTopicOrPartition)
    );
    assert!(b.topics.get("__consumer_offsets").is_none());
}

#[test]
fn metadata_does_not_auto_create_when_the_broker_forbids_it() {
    let dir = tempfile::tempdir().unwrap();
    let b = open_with(dir.path(), |c| c.auto_create_topics = false);
    let resp = admin::metadata(&b, metadata_req(Some(&["fresh"])), 3);
    assert_eq!(
        resp.topics[0].error_code,
        code(ResponseError::UnknownTopicOrPartition)
    );
    assert!(b.topics.get("fresh").is_none());
    encodes(&resp, 3);
}

#[test]
fn metadata_finds_topics_by_id_from_v12() {
    let dir = tempfile::tempdir().unwrap();
    let b = open(dir.path());
    create(&b, "alpha", 1);
    let id = b.topics.get("alpha").unwrap().id;
    let unknown = Uuid::new_v4();
    let by_id = |ids: &[Uuid]| {
        let mut r = MetadataRequest::default();
        r.topics = Some(
            ids.iter()
                .map(|id| {
                    let mut t = MetadataRequestTopic::default();
                    t.name = None;
                    t.topic_id = *id;
                    t
                })
                .collect(),
        );
        r
    };
    let resp = admin::metadata(&b, by_id(&[id, unknown]), 12);
    encodes(&resp, 12);
    assert_eq!(resp.topics[0].error_code, 0);
    assert_eq!(
        resp.topics[0].name.as_ref().map(|n| str_of(&n.0)),
        Some("alpha")
    );
    assert_eq!(
        resp.topics[1].error_code,
        code(ResponseError::UnknownTopicId)
    );
    assert_eq!(resp.topics[1].topic_id, unknown);
    assert_eq!(resp.topics[1].name, None);

    // v10 and v11 carry ids but Kafka refuses them in requests.
    let resp = admin::metadata(&b, by_id(&[id]), 10);
    assert_eq!(
        resp.topics[0].error_code,
        code(ResponseError::InvalidRequest)
    );
    encodes(&resp, 10);
}

// ---- CreateTopics / DeleteTopics / CreatePartitions -------------------------------------------

#[test]
fn create_topics_applies_configs_and_reports_them() {
    let dir = tempfile::tempdir().unwrap();
    let b = open_with(dir.path(), |c| c.num_partitions = 2);
    let req = create_req(
        vec![new_topic(
            "orders",
            -1,
            -1,
            &[("retention.ms", Some("1000"))],
        )],
        false,
    );
    let resp = admin::create_topics(&b, req, 7);
    encodes(&resp, 7);
    let t = &resp.topics[0];
    assert_eq!(t.error_code, 0);
    assert_eq!(t.error_message, None);
    assert_eq!(t.num_partitions, 2, "-1 takes num.partitions");
    assert_eq!(t.replication_factor, 1);
    assert_eq!(t.topic_id, b.topics.get("orders").unwrap().id);
    let configs = t.configs.as_ref().unwrap();
    // Every config mirrorlog honours, among Kafka's others (at the values it behaves as).
    assert!(
        LogConfig::SUPPORTED_TOPIC_KEYS
            .iter()
            .all(|k| configs.iter().any(|c| str_of(&c.name) == *k))
    );
    let retention = configs
        .iter()
        .find(|c| str_of(&c.name) == "retention.ms")
        .unwrap();
    assert_eq!(retention.value.as_ref().map(str_of), Some("1000"));
    assert_eq!(retention.config_source, SOURCE_DYNAMIC_TOPIC_CONFIG);
    let segment = configs
        .iter()
        .find(|c| str_of(&c.name) == "segment.bytes")
        .unwrap();
    assert_eq!(segment.config_source, SOURCE_DEFAULT_CONFIG);

    // The override is what DescribeConfigs shows; everything else is a default.
    assert_eq!(
        topic_config(&b, "orders", "retention.ms"),
        ("1000".into(), SOURCE_DYNAMIC_TOPIC_CONFIG)
    );
    assert_eq!(
        topic_config(&b, "orders", "segment.bytes"),
        ("1073741824".into(), SOURCE_DEFAULT_CONFIG)
    );
    assert_eq!(
        b.partition("orders", 1)
            .unwrap()
            .read()
            .config()
            .retention_ms,
        1000
    );

    // Older versions carry neither configs nor the id.
    let resp = admin::create_topics(&b, create_req(vec![new_topic("old", 1, 1, &[])], false), 2);
    assert_eq!(resp.topics[0].error_code, 0);
    encodes(&resp, 2);
    let resp = admin::create_topics(&b, create_req(vec![new_topic("five", 1, 1, &[])], false), 5);
    assert!(resp.topics[0].configs.is_some());
    assert_eq!(resp.topics[0].topic_id, Uuid::nil());
    encodes(&resp, 5);
}

#[test]
fn create_topics_rejects_what_it_cannot_honour() {
    let dir = tempfile::tempdir().unwrap();
    let b = open(dir.path());
    create(&b, "taken", 1);
    create(&b, "my_topic", 1);
    let one = |t: CreatableTopic| {
        let resp = admin::create_topics(&b, create_req(vec![t], false), 7);
        encodes(&resp, 7);
        let r = resp.topics[0].clone();
        (
            r.error_code,
            r.error_message
                .map(|m| str_of(&m).to_string())
                .unwrap_or_default(),
        )
    };

    let (e, m) = one(new_topic(
        "compacted",
        1,
        1,
        &[("cleanup.policy", Some("compact"))],
    ));
    assert_eq!(e, code(ResponseError::InvalidConfig));
    assert!(m.contains("compact"), "{m}");
    let (e, m) = one(new_topic("typo", 1, 1, &[("retention.msx", Some("1"))]));
    assert_eq!(e, code(ResponseError::InvalidConfig));
    assert!(m.contains("retention.msx"), "{m}");
    // Broker spellings are not topic configs.
    let (e, _) = one(new_topic(
        "broker-key",
        1,
        1,
        &[("log.retention.ms", Some("1"))],
    ));
    assert_eq!(e, code(ResponseError::InvalidConfig));
    let (e, m) = one(new_topic("null", 1, 1, &[("retention.ms", None)]));
    assert_eq!(e, code(ResponseError::InvalidConfig));
    assert!(m.contains("Null value"), "{m}");
    let (e, _) = one(new_topic(
        "badvalue",
        1,
        1,
        &[("retention.ms", Some("soon"))],
    ));
    assert_eq!(e, code(ResponseError::InvalidConfig));

    let (e, m) = one(new_topic("replicated", 1, 3, &[]));
    assert_eq!(e, code(ResponseError::InvalidReplicationFactor));
    assert!(m.contains("single-node"), "{m}");
    let (e, _) = one(new_topic("zero-rf", 1, 0, &[]));
    assert_eq!(e, code(ResponseError::InvalidReplicationFactor));
    let (e, _) = one(new_topic("zero", 0, 1, &[]));
    assert_eq!(e, code(ResponseError::InvalidPartitions));
    let (e, _) = one(new_topic("huge", MAX_PARTITIONS_PER_TOPIC + 1, 1, &[]));
    assert_eq!(e, code(ResponseError::InvalidPartitions));
    let (e, _) = one(new_topic("taken", 1, 1, &[]));
    assert_eq!(e, code(ResponseError::TopicAlreadyExists));
    let (e, _) = one(new_topic("bad/name", 1, 1, &[]));
    assert_eq!(e, code(ResponseError::InvalidTopicException));
    let (e, _) = one(new_topic("my.topic", 1, 1, &[]));
    assert_eq!(
        e,
        code(ResponseError::InvalidTopicException),
        "collides with my_topic once '.' = '_'"
    );

    for name in [
        "compacted",
        "typo",
        "broker-key",
        "null",
        "badvalue",
        "replicated",
        "zero-rf",
        "zero",
        "huge",
    ] {
        assert!(b.topics.get(name).is_none(), "{name}");
    }

    // Duplicate names in one request.
    let resp = admin::create_topics(
        &b,
        create_req(
            vec![new_topic("twice", 1, 1, &[]), new_topic("twice", 1, 1, &[])],
            false,
        ),
        7,
    );
    assert_eq!(resp.topics.len(), 1);
    assert_eq!(
        resp.topics[0].error_code,
        code(ResponseError::InvalidRequest)
    );
    assert!(b.topics.get("twice").is_none());
}

#[test]
fn create_topics_takes_manual_assignments_to_this_node_only() {
    let dir = tempfile::tempdir().unwrap();
    let b = open(dir.path());
    let assigned = |name: &str, parts: &[(i32, &[i32])]| {
        let mut t = new_topic(name, -1, -1, &[]);
        t.assignments = parts
            .iter()
            .map(|(p, ids)| {
                let mut a = CreatableReplicaAssignment::default();
                a.partition_index = *p;
                a.broker_ids = ids.iter().map(|i| BrokerId(*i)).collect();
                a
            })
            .collect();
        let resp = admin::create_topics(&b, create_req(vec![t], false), 7);
        resp.topics[0].error_code
    };
    assert_eq!(assigned("manual", &[(0, &[1]), (1, &[1])]), 0);
    assert_eq!(b.topics.get("manual").unwrap().partitions, 2);
    assert_eq!(
        assigned("elsewhere", &[(0, &[2])]),
        code(ResponseError::InvalidReplicaAssignment)
    );
    assert_eq!(
        assigned("twice", &[(0, &[1, 1])]),
        code(ResponseError::InvalidReplicaAssignment)
    );
    assert_eq!(
        assigned("gap", &[(0, &[1]), (2, &[1])]),
        code(ResponseError::InvalidReplicaAssignment)
    );
    assert_eq!(
        assigned("empty", &[(0, &[])]),
        code(ResponseError::InvalidReplicaAssignment)
    );
    // An assignment with a partition count is malformed.
    let mut t = new_topic("both", 1, -1, &[]);
    let mut a = CreatableReplicaAssignment::default();
    a.broker_ids = vec![BrokerId(1)];
    t.assignments = vec![a];
    let resp = admin::create_topics(&b, create_req(vec![t], false), 7);
    assert_eq!(
        resp.topics[0].error_code,
        code(ResponseError::InvalidRequest)
    );
}

#[test]
fn create_topics_validate_only_creates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let b = open(dir.path());
    let req = create_req(
        vec![new_topic("dry", 4, 1, &[("retention.ms", Some("1000"))])],
        true,
    );
    let resp = admin::create_topics(&b, req, 7);
    encodes(&resp, 7);
    assert_eq!(resp.topics[0].error_code, 0);
    assert_eq!(resp.topics[0].num_partitions, 4);
    assert!(b.topics.get("dry").is_none());
    assert!(b.partition("dry", 0).is_none());
    let req = create_req(
        vec![new_topic(
            "dry",
            4,
            1,
            &[("cleanup.policy", Some("compact"))],
        )],
        true,
    );
    assert_eq!(
        admin::create_topics(&b, req, 7).topics[0].error_code,
        code(ResponseError::InvalidConfig)
    );
}

#[test]
fn delete_topics_by_name_and_by_id() {
    let dir = tempfile::tempdir().unwrap();
    let b = open(dir.path());
    create(&b, "one", 2);
    create(&b, "two", 1);
    let mut r = DeleteTopicsRequest::default();
    r.topic_names = vec![tn("one"), tn("missing")];
    let resp = admin::delete_topics(&b, r, 1);
    encodes(&resp, 1);
    assert_eq!(resp.responses[0].error_code, 0);
    assert_eq!(
        resp.responses[1].error_code,
        code(ResponseError::UnknownTopicOrPartition)
    );
    assert!(b.topics.get("one").is_none());
    assert!(b.partition("one", 0).is_none());

    let id = b.topics.get("two").unwrap().id;
    let unknown = Uuid::new_v4();
    let state = |name: Option<&str>, id: Uuid| {
        let mut t = DeleteTopicState::default();
        t.name = name.map(tn);
        t.topic_id = id;
        t
    };
    let mut r = DeleteTopicsRequest::default();
    r.topics = vec![
        state(None, id),
        state(None, unknown),
        state(None, Uuid::nil()),
        state(Some("x"), unknown),
    ];
    let resp = admin::delete_topics(&b, r, 6);
    encodes(&resp, 6);
    let deleted = resp.responses.iter().find(|r| r.topic_id == id).unwrap();
    assert_eq!(deleted.error_code, 0);
    assert_eq!(deleted.name.as_ref().map(|n| str_of(&n.0)), Some("two"));
    assert!(b.topics.get("two").is_none());
    let unknown_answers: Vec<i16> = resp
        .responses
        .iter()
        .filter(|r| r.topic_id == unknown)
        .map(|r| r.error_code)
        .collect();
    assert!(unknown_answers.contains(&code(ResponseError::UnknownTopicId)));
    assert!(
        unknown_answers.contains(&code(ResponseError::InvalidRequest)),
        "name and id together"
    );
    let neither = resp.responses.iter().find(|r| r.topic_id.is_nil()).unwrap();
    assert_eq!(
        neither.error_code,
        code(ResponseError::InvalidRequest),
        "neither name nor id"
    );
    assert_eq!(resp.responses.len(), 4);
}

#[test]
fn delete_topics_refuses_internal_topics() {
    let dir = tempfile::tempdir().unwrap();
    let b = open(dir.path());
    b.topics
        .create(&b.logs, "__consumer_offsets", 1, LogConfig::default(), None)
        .unwrap();
    let mut r = DeleteTopicsRequest::default();
    r.topic_names = vec![tn("__consumer_offsets")];
    let resp = admin::delete_topics(&b, r, 5);
    encodes(&resp, 5);
    assert_eq!(
        resp.responses[0].error_code,
        code(ResponseError::InvalidTopicException)
    );
    assert!(resp.responses[0].error_message.is_some());
    assert!(b.topics.get("__consumer_offsets").is_some());
}

fn grow(
    b: &Broker,
    topic: &str,
    count: i32,
    assignments: Option<Vec<Vec<i32>>>,
    validate_only: bool,
) -> i16 {
    let mut t = CreatePartitionsTopic::default();
    t.name = tn(topic);
    t.count = count;
    t.assignments = assignments.map(|a| {
        a.into_iter()
            .map(|ids| {
                let mut one = CreatePartitionsAssignment::default();
                one.broker_ids = ids.into_iter().map(BrokerId).collect();
                one
            })
            .collect()
    });
    let mut r = CreatePartitionsRequest::default();
    r.timeout_ms = 30_000;
    r.topics = vec![t];
    r.validate_only = validate_only;
    let resp = admin::create_partitions(b, r, 3);
    encodes(&resp, 3);
    encodes(&resp, 0);
    resp.results[0].error_code
}

#[test]
fn create_partitions_only_grows() {
    let dir = tempfile::tempdir().unwrap();
    let b = open(dir.path());
    create(&b, "grow", 1);
    assert_eq!(grow(&b, "grow", 4, None, true), 0);
    assert_eq!(
        b.topics.get("grow").unwrap().partitions,
        1,
        "validate_only changes nothing"
    );
    assert_eq!(grow(&b, "grow", 4, None, false), 0);
    assert_eq!(b.topics.get("grow").unwrap().partitions, 4);
    assert!(b.partition("grow", 3).is_some());
    let md = admin::metadata(&b, metadata_req(Some(&["grow"])), 12);
    assert_eq!(md.topics[0].partitions.len(), 4);

    assert_eq!(
        grow(&b, "grow", 2, None, false),
        code(ResponseError::InvalidPartitions)
    );
    assert_eq!(
        grow(&b, "grow", 4, None, false),
        code(ResponseError::InvalidPartitions)
    );
    assert_eq!(
        grow(&b, "missing", 4, None, false),
        code(ResponseError::UnknownTopicOrPartition)
    );
    assert_eq!(
        grow(&b, "grow", 6, Some(vec![vec![1]]), false),
        code(ResponseError::InvalidReplicaAssignment)
    );
    assert_eq!(
        grow(&b, "grow", 5, Some(vec![vec![7]]), false),
        code(ResponseError::InvalidReplicaAssignment)
    );
    assert_eq!(grow(&b, "grow", 5, Some(vec![vec![1]]), false), 0);
    assert_eq!(b.topics.get("grow").unwrap().partitions, 5);
}

// ---- DescribeConfigs / IncrementalAlterConfigs ------------------------------------------------

#[test]
fn describe_configs_lists_topic_and_broker_configs() {
    let dir = tempfile::tempdir().unwrap();
    // A broker default that differs from Kafka's shows as STATIC_BROKER_CONFIG.
    let b = open_with(dir.path(), |c| {
        c.logs.default_log_config.retention_bytes = 1 << 30
    });
    create(&b, "cfg", 1);

    let mut r = describe_req(RESOURCE_TOPIC, "cfg", None);
    r.include_synonyms = true;
    r.include_documentation = true;
    let resp = admin::describe_configs(&b, r.clone(), 4);
    encodes(&resp, 4);
    let res = &resp.results[0];
    assert_eq!(res.error_code, 0);
    assert_eq!(res.error_message, None);
    let honoured: Vec<&str> = res
        .configs
        .iter()
        .map(|c| str_of(&c.name))
        .filter(|n| LogConfig::SUPPORTED_TOPIC_KEYS.contains(n))
        .collect();
    assert_eq!(honoured, LogConfig::SUPPORTED_TOPIC_KEYS);
    let rb = res
        .configs
        .iter()
        .find(|c| str_of(&c.name) == "retention.bytes")
        .unwrap();
    assert_eq!(rb.value.as_ref().map(str_of), Some("1073741824"));
    assert_eq!(rb.config_source, SOURCE_STATIC_BROKER_CONFIG);
    assert!(!rb.read_only && !rb.is_sensitive);
    assert_eq!(rb.config_type, 5, "LONG");
    assert!(rb.documentation.is_some());
    let syn: Vec<(&str, i8)> = rb
        .synonyms
        .iter()
        .map(|s| (str_of(&s.name), s.source))
        .collect();
    assert_eq!(
        syn,
        [
            ("log.retention.bytes", SOURCE_STATIC_BROKER_CONFIG),
            ("log.retention.bytes", SOURCE_DEFAULT_CONFIG)
        ]
    );
    let cp = res
        .configs
        .iter()
        .find(|c| str_of(&c.name) == "cleanup.policy")
        .unwrap();
    assert_eq!(cp.config_type, 7, "LIST");
    assert_eq!(cp.config_source, SOURCE_DEFAULT_CONFIG);

    // v1: no config type or documentation; no synonyms unless asked.
    let resp = admin::describe_configs(&b, describe_req(RESOURCE_TOPIC, "cfg", None), 1);
    encodes(&resp, 1);
    assert!(
        resp.results[0]
            .configs
            .iter()
            .all(|c| c.config_type == 0 && c.documentation.is_none() && c.synonyms.is_empty())
    );

    // Filtered keys; unknown keys are simply absent.
    let resp = admin::describe_configs(
        &b,
        describe_req(RESOURCE_TOPIC, "cfg", Some(&["segment.ms", "nope"])),
        4,
    );
    assert_eq!(resp.results[0].configs.len(), 1);

    let resp = admin::describe_configs(&b, describe_req(RESOURCE_TOPIC, "missing", None), 4);
    assert_eq!(
        resp.results[0].error_code,
        code(ResponseError::UnknownTopicOrPartition)
    );
    assert!(resp.results[0].error_message.is_some());
    encodes(&resp, 4);

    // The broker: this node's settings, read-only.
    let resp = admin::describe_configs(&b, describe_req(RESOURCE_BROKER, "1", None), 4);
    encodes(&resp, 4);
    let res = &resp.results[0];
    assert_eq!(res.error_code, 0);
    let get = |k: &str| {
        res.configs
            .iter()
            .find(|c| str_of(&c.name) == k)
            .unwrap_or_else(|| panic!("{k}"))
    };
    assert_eq!(get("num.partitions").value.as_ref().map(str_of), Some("1"));
    assert_eq!(get("num.partitions").config_source, SOURCE_DEFAULT_CONFIG);
    assert_eq!(
        get("auto.create.topics.enable").value.as_ref().map(str_of),
        Some("true")
    );
    assert_eq!(get("node.id").value.as_ref().map(str_of), Some("1"));
    assert_eq!(
        get("log.retention.bytes").value.as_ref().map(str_of),
        Some("1073741824")
    );
    assert_eq!(
        get("log.retention.bytes").config_source,
        SOURCE_STATIC_BROKER_CONFIG
    );
    assert!(res.configs.iter().all(|c| c.read_only));
    let resp = admin::describe_configs(&b, describe_req(RESOURCE_BROKER, "", None), 4);
    assert_eq!(resp.results[0].error_code, 0);
    assert!(resp.results[0].configs.is_empty());
    let resp = admin::describe_configs(&b, describe_req(RESOURCE_BROKER, "2", None), 4);
    assert_eq!(
        resp.results[0].error_code,
        code(ResponseError::InvalidRequest)
    );
    let resp = admin::describe_configs(&b, describe_req(8, "1", None), 4);
    assert_eq!(
        resp.results[0].error_code,
        code(ResponseError::InvalidRequest)
    );
}

#[test]
fn incremental_alter_configs_set_and_delete_persist_across_reopen() {
    let dir = tempfile::tempdir().unwrap();
    {
        let b = open(dir.path());
        create(&b, "alter", 2);
        let resp = admin::incremental_alter_configs(
            &b,
            alter_req(
                "alter",
                &[
                    ("retention.ms", OP_SET, Some("5000")),
                    ("segment.bytes", OP_SET, Some("1048576")),
                ],
                false,
            ),
            1,
        );
        encodes(&resp, 1);
        encodes(&resp, 0);
        assert_eq!(
            resp.responses[0].error_code, 0,
            "{:?}",
            resp.responses[0].error_message
        );
        assert_eq!(
            topic_config(&b, "alter", "retention.ms"),
            ("5000".into(), SOURCE_DYNAMIC_TOPIC_CONFIG)
        );
        assert_eq!(
            b.partition("alter", 1)
                .unwrap()
                .read()
                .config()
                .retention_ms,
            5000
        );

        let resp = admin::incremental_alter_configs(
            &b,
            alter_req("alter", &[("segment.bytes", OP_DELETE, None)], false),
            1,
        );
        assert_eq!(resp.responses[0].error_code, 0);
        assert_eq!(
            topic_config(&b, "alter", "segment.bytes"),
            ("1073741824".into(), SOURCE_DEFAULT_CONFIG)
        );
        assert_eq!(
            topic_config(&b, "alter", "retention.ms"),
            ("5000".into(), SOURCE_DYNAMIC_TOPIC_CONFIG)
        );
    }
    let b = open(dir.path());
    assert_eq!(
        topic_config(&b, "alter", "retention.ms"),
        ("5000".into(), SOURCE_DYNAMIC_TOPIC_CONFIG)
    );
    assert_eq!(
        topic_config(&b, "alter", "segment.bytes"),
        ("1073741824".into(), SOURCE_DEFAULT_CONFIG)
    );
    assert_eq!(
        b.partition("alter", 1)
            .unwrap()
            .read()
            .config()
            .retention_ms,
        5000
    );

    let resp = admin::incremental_alter_configs(
        &b,
        alter_req("alter", &[("retention.ms", OP_DELETE, None)], false),
        1,
    );
    assert_eq!(resp.responses[0].error_code, 0);
    drop(b);
    let b = open(dir.path());
    assert_eq!(
        topic_config(&b, "alter", "retention.ms"),
        ("604800000".into(), SOURCE_DEFAULT_CONFIG)
    );
}

#[test]
fn incremental_alter_configs_rejects_bad_changes_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let b = open(dir.path());
    create(&b, "strict", 1);
    let one = |r: IncrementalAlterConfigsRequest| {
        let resp = admin::incremental_alter_configs(&b, r, 1);
        encodes(&resp, 1);
        let r = &resp.responses[0];
        (
            r.error_code,
            r.error_message
                .as_ref()
                .map(|m| str_of(m).to_string())
                .unwrap_or_default(),
        )
    };
    let (e, m) = one(alter_req(
        "strict",
        &[("cleanup.policy", OP_SET, Some("compact"))],
        false,
    ));
    assert_eq!(e, code(ResponseError::InvalidConfig));
    assert!(m.contains("compact"), "{m}");
    let (e, m) = one(alter_req(
        "strict",
        &[("no.such.key", OP_SET, Some("1"))],
        false,
    ));
    assert_eq!(e, code(ResponseError::InvalidConfig));
    assert!(m.contains("no.such.key"), "{m}");
    let (e, _) = one(alter_req(
        "strict",
        &[("retention.ms", OP_APPEND, Some("1"))],
        false,
    ));
    assert_eq!(e, code(ResponseError::InvalidConfig));
    let (e, _) = one(alter_req(
        "strict",
        &[("cleanup.policy", OP_APPEND, Some("compact"))],
        false,
    ));
    assert_eq!(e, code(ResponseError::InvalidConfig));
    let (e, _) = one(alter_req(
        "strict",
        &[("retention.ms", OP_SET, None)],
        false,
    ));
    assert_eq!(e, code(ResponseError::InvalidRequest));
    let (e, _) = one(alter_req(
        "strict",
        &[
            ("retention.ms", OP_SET, Some("1")),
            ("retention.ms", OP_DELETE, None),
        ],
        false,
    ));
    assert_eq!(e, code(ResponseError::InvalidRequest), "duplicate keys");
    let (e, _) = one(alter_req(
        "strict",
        &[("retention.ms", 9, Some("1"))],
        false,
    ));
    assert_eq!(e, code(ResponseError::InvalidRequest));
    // A valid change that is only validated.
    let (e, _) = one(alter_req(
        "strict",
        &[("retention.ms", OP_SET, Some("1234"))],
        true,
    ));
    assert_eq!(e, 0);
    let (e, _) = one(alter_req(
        "missing",
        &[("retention.ms", OP_SET, Some("1"))],
        false,
    ));
    assert_eq!(e, code(ResponseError::UnknownTopicOrPartition));
    // A no-op APPEND of an existing list item is fine.
    let (e, _) = one(alter_req(
        "strict",
        &[("cleanup.policy", OP_APPEND, Some("delete"))],
        false,
    ));
    assert_eq!(e, 0);

    assert_eq!(
        topic_config(&b, "strict", "retention.ms"),
        ("604800000".into(), SOURCE_DEFAULT_CONFIG)
    );
    // APPEND sets the key for the topic (as Kafka's controller records it): an override now,
    // even with the default's value.
    assert_eq!(
        topic_config(&b, "strict", "cleanup.policy"),
        ("delete".into(), SOURCE_DYNAMIC_TOPIC_CONFIG)
    );

    // SUBTRACT of the last item leaves the empty list: Kafka 4.2's infinite retention, kept and
    // described as such (it used to be refused as a malformed value).
    let (e, _) = one(alter_req(
        "strict",
        &[("cleanup.policy", OP_SUBTRACT, Some("delete"))],
        false,
    ));
    assert_eq!(e, 0);
    assert_eq!(
        topic_config(&b, "strict", "cleanup.policy"),
        (String::new(), SOURCE_DYNAMIC_TOPIC_CONFIG)
    );

    let mut r = alter_req("1", &[("num.partitions", OP_SET, Some("3"))], false);
    r.resources[0].resource_type = RESOURCE_BROKER;
    assert_eq!(one(r).0, code(ResponseError::InvalidRequest));
}

// ---- DescribeCluster / FindCoordinator --------------------------------------------------------

#[test]
fn describe_cluster_describes_this_node() {
    let dir = tempfile::tempdir().unwrap();
    let b = open(dir.path());
    for v in 0..=1 {
        let resp = admin::describe_cluster(&b, DescribeClusterRequest::default(), v);
        encodes(&resp, v);
        assert_eq!(resp.error_code, 0);
        assert_eq!(str_of(&resp.cluster_id), "test-cluster");
        assert_eq!(resp.controller_id.0, 1);
        assert_eq!(resp.brokers.len(), 1);
        assert_eq!(resp.brokers[0].broker_id.0, 1);
        assert_eq!(resp.brokers[0].port, 9092);
        assert_eq!(resp.endpoint_type, 1);
    }
    let mut r = DescribeClusterRequest::default();
    r.endpoint_type = 2;
    let resp = admin::describe_cluster(&b, r, 1);
    encodes(&resp, 1);
    assert_eq!(resp.error_code, code(ResponseError::MismatchedEndpointType));
    let mut r = DescribeClusterRequest::default();
    r.include_cluster_authorized_operations = true;
    assert_eq!(
        admin::describe_cluster(&b, r, 1).cluster_authorized_operations,
        CLUSTER_AUTHORIZED_OPERATIONS
    );
}

#[test]
fn find_coordinator_answers_this_node_for_every_key() {
    let dir = tempfile::tempdir().unwrap();
    let b = open(dir.path());
    for v in 0..=3 {
        let mut r = FindCoordinatorRequest::default();
        r.key = s("group-a");
        r.key_type = if v >= 1 { 1 } else { 0 };
        let resp = admin::find_coordinator(&b, r, v);
        encodes(&resp, v);
        assert_eq!(resp.error_code, 0);
        assert_eq!(resp.node_id.0, 1);
        assert_eq!(str_of(&resp.host), "127.0.0.1");
        assert_eq!(resp.port, 9092);
    }
    let mut r = FindCoordinatorRequest::default();
    r.key = s("x");
    r.key_type = 7;
    let resp = admin::find_coordinator(&b, r, 3);
    encodes(&resp, 3);
    assert_eq!(resp.error_code, code(ResponseError::InvalidRequest));

    for v in 4..=6 {
        let mut r = FindCoordinatorRequest::default();
        r.key_type = 0;
        r.coordinator_keys = vec![s("g1"), s("g2"), s("g3")];
        let resp = admin::find_coordinator(&b, r, v);
        encodes(&resp, v);
        let keys: Vec<&str> = resp.coordinators.iter().map(|c| str_of(&c.key)).collect();
        assert_eq!(keys, ["g1", "g2", "g3"]);
        assert!(
            resp.coordinators
                .iter()
                .all(|c| c.error_code == 0 && c.node_id.0 == 1 && c.port == 9092)
        );
    }
    let mut r = FindCoordinatorRequest::default();
    r.key_type = 2;
    r.coordinator_keys = vec![s("share:1:0")];
    let resp = admin::find_coordinator(&b, r, 6);
    encodes(&resp, 6);
    assert_eq!(
        resp.coordinators[0].error_code,
        code(ResponseError::InvalidRequest)
    );
}

// ---- ListOffsets / OffsetForLeaderEpoch / DeleteRecords ---------------------------------------

#[test]
fn list_offsets_earliest_latest_by_time_and_max_timestamp() {
    let dir = tempfile::tempdir().unwrap();
    let b = open(dir.path());
    create(&b, "log", 1);
    let t0 = NOW_MS - 10_000;
    assert_eq!(append(&b, "log", 0, &[t0, t0 + 100]), 0); // offsets 0, 1
    assert_eq!(append(&b, "log", 0, &[t0 + 5000, t0 + 5100]), 2); // 2, 3: max timestamp at 3
    assert_eq!(append(&b, "log", 0, &[t0 + 2000]), 4); // 4
    set_hw(&b, "log", 5);

    assert_eq!(
        list(&b, list_req("log", 0, offsets::EARLIEST_TIMESTAMP), 8),
        (0, 0, -1, 0)
    );
    assert_eq!(
        list(&b, list_req("log", 0, offsets::EARLIEST_LOCAL_TIMESTAMP), 8),
        (0, 0, -1, 0)
    );
    assert_eq!(
        list(&b, list_req("log", 0, offsets::LATEST_TIMESTAMP), 8),
        (0, 5, -1, 0)
    );
    // By time: the first record with a timestamp at or after the target, in offset order.
    assert_eq!(
        list(&b, list_req("log", 0, t0 + 50), 8),
        (0, 1, t0 + 100, 0)
    );
    assert_eq!(
        list(&b, list_req("log", 0, t0 + 1500), 8),
        (0, 2, t0 + 5000, 0)
    );
    assert_eq!(list(&b, list_req("log", 0, t0), 8), (0, 0, t0, 0));
    assert_eq!(
        list(&b, list_req("log", 0, NOW_MS), 8),
        (0, -1, -1, -1),
        "after every record"
    );
    assert_eq!(
        list(&b, list_req("log", 0, offsets::MAX_TIMESTAMP), 8),
        (0, 3, t0 + 5100, 0)
    );
    // v1–3 carry no leader epoch.
    for v in 1..=3 {
        assert_eq!(
            list(&b, list_req("log", 0, offsets::LATEST_TIMESTAMP), v),
            (0, 5, -1, -1)
        );
    }

    // Consumers see up to the high watermark; replicas up to the log end.
    set_hw(&b, "log", 2);
    assert_eq!(
        list(&b, list_req("log", 0, offsets::LATEST_TIMESTAMP), 8).1,
        2
    );
    assert_eq!(
        list(&b, list_req("log", 0, t0 + 1500), 8),
        (0, -1, -1, -1),
        "offset 2 is not readable yet"
    );
    assert_eq!(
        list(&b, list_req("log", 0, offsets::MAX_TIMESTAMP), 8).1,
        -1
    );
    let mut r = list_req("log", 0, offsets::LATEST_TIMESTAMP);
    r.isolation_level = 1;
    assert_eq!(list(&b, r, 8).1, 2, "no transactions: LSO = HW");
    let mut r = list_req("log", 0, offsets::LATEST_TIMESTAMP);
    r.replica_id = BrokerId(1);
    assert_eq!(list(&b, r, 8).1, 5);

    // Leader-epoch fencing (v4+) and unknown partitions.
    let mut r = list_req("log", 0, offsets::LATEST_TIMESTAMP);
    r.topics[0].partitions[0].current_leader_epoch = 3;
    assert_eq!(list(&b, r, 8).0, code(ResponseError::UnknownLeaderEpoch));
    assert_eq!(
        list(&b, list_req("log", 1, offsets::LATEST_TIMESTAMP), 8).0,
        code(ResponseError::UnknownTopicOrPartition)
    );
    assert_eq!(
        list(&b, list_req("nope", 0, offsets::LATEST_TIMESTAMP), 8).0,
        code(ResponseError::UnknownTopicOrPartition)
    );
    let mut r = list_req("log", 0, offsets::LATEST_TIMESTAMP);
    let again = r.topics[0].partitions[0].clone();
    r.topics[0].partitions.push(again);
    let resp = offsets::list_offsets(&b, r, 8);
    let codes: Vec<i16> = resp.topics[0]
        .partitions
        .iter()
        .map(|p| p.error_code)
        .collect();
    assert_eq!(
        codes,
        [code(ResponseError::InvalidRequest); 2],
        "a partition named twice"
    );
}

#[test]
fn list_offsets_fences_stale_leader_epochs() {
    let dir = tempfile::tempdir().unwrap();
    let b = open(dir.path());
    create(&b, "epochs", 1);
    append(&b, "epochs", 0, &[NOW_MS]);
    append(&b, "epochs", 2, &[NOW_MS]);
    set_hw(&b, "epochs", 2);
    let with_epoch = |e: i32| {
        let mut r = list_req("epochs", 0, offsets::LATEST_TIMESTAMP);
        r.topics[0].partitions[0].current_leader_epoch = e;
        list(&b, r, 4)
    };
    assert_eq!(with_epoch(2), (0, 2, -1, 2));
    assert_eq!(with_epoch(-1), (0, 2, -1, 2));
    assert_eq!(with_epoch(1).0, code(ResponseError::FencedLeaderEpoch));
    assert_eq!(with_epoch(3).0, code(ResponseError::UnknownLeaderEpoch));
    // The epoch of the offset found.
    assert_eq!(
        list(&b, list_req("epochs", 0, offsets::EARLIEST_TIMESTAMP), 4),
        (0, 0, -1, 0)
    );
    assert_eq!(
        list(&b, list_req("epochs", 0, NOW_MS), 4),
        (0, 0, NOW_MS, 0)
    );
}

fn epoch_req(
    topic: &str,
    partition: i32,
    leader_epoch: i32,
    current: i32,
) -> OffsetForLeaderEpochRequest {
    let mut p = OffsetForLeaderPartition::default();
    p.partition = partition;
    p.leader_epoch = leader_epoch;
    p.current_leader_epoch = current;
    let mut t = OffsetForLeaderTopic::default();
    t.topic = tn(topic);
    t.partitions = vec![p];
    let mut r = OffsetForLeaderEpochRequest::default();
    r.replica_id = BrokerId(-1);
    r.topics = vec![t];
    r
}

fn end_offset(b: &Broker, r: OffsetForLeaderEpochRequest, v: i16) -> (i16, i32, i64) {
    let resp = offsets::offset_for_leader_epoch(b, r, v);
    encodes(&resp, v);
    let p = &resp.topics[0].partitions[0];
    (p.error_code, p.leader_epoch, p.end_offset)
}

#[test]
fn offset_for_leader_epoch_answers_the_end_of_each_epoch() {
    let dir = tempfile::tempdir().unwrap();
    let b = open(dir.path());
    create(&b, "lead", 1);
    append(&b, "lead", 1, &[NOW_MS, NOW_MS]); // epoch 1: 0..2
    append(&b, "lead", 3, &[NOW_MS]); // epoch 3: 2..3
    append(&b, "lead", 3, &[NOW_MS]); // LEO 4
    for v in 2..=4 {
        assert_eq!(
            end_offset(&b, epoch_req("lead", 0, 3, -1), v),
            (0, 3, 4),
            "latest epoch ends at the log end"
        );
        assert_eq!(end_offset(&b, epoch_req("lead", 0, 1, -1), v), (0, 1, 2));
        assert_eq!(
            end_offset(&b, epoch_req("lead", 0, 2, -1), v),
            (0, 1, 2),
            "floor epoch"
        );
        assert_eq!(
            end_offset(&b, epoch_req("lead", 0, 0, -1), v),
            (0, 0, 0),
            "before the log's history"
        );
        assert_eq!(
            end_offset(&b, epoch_req("lead", 0, 5, -1), v),
            (0, -1, -1),
            "unknown epoch"
        );
    }
    assert_eq!(end_offset(&b, epoch_req("lead", 0, 1, 3), 4), (0, 1, 2));
    assert_eq!(
        end_offset(&b, epoch_req("lead", 0, 1, 2), 4).0,
        code(ResponseError::FencedLeaderEpoch)
    );
    assert_eq!(
        end_offset(&b, epoch_req("lead", 0, 1, 4), 4).0,
        code(ResponseError::UnknownLeaderEpoch)
    );
    assert_eq!(
        end_offset(&b, epoch_req("lead", 9, 1, -1), 4),
        (code(ResponseError::UnknownTopicOrPartition), -1, -1)
    );
}

fn delete_records(b: &Broker, topic: &str, offset: i64) -> (i16, i64) {
    let mut p = DeleteRecordsPartition::default();
    p.partition_index = 0;
    p.offset = offset;
    let mut t = DeleteRecordsTopic::default();
    t.name = tn(topic);
    t.partitions = vec![p];
    let mut r = DeleteRecordsRequest::default();
    r.topics = vec![t];
    let resp = offsets::delete_records(b, r, 2);
    encodes(&resp, 2);
    encodes(&resp, 0);
    let p = &resp.topics[0].partitions[0];
    (p.error_code, p.low_watermark)
}

#[test]
fn delete_records_moves_the_log_start_up_to_the_high_watermark() {
    let dir = tempfile::tempdir().unwrap();
    let b = open(dir.path());
    create(&b, "trim", 1);
    for _ in 0..5 {
        append(&b, "trim", 0, &[NOW_MS, NOW_MS]);
    }
    set_hw(&b, "trim", 6);
    assert_eq!(delete_records(&b, "trim", 3), (0, 3));
    assert_eq!(
        list(&b, list_req("trim", 0, offsets::EARLIEST_TIMESTAMP), 8).1,
        3
    );
    assert_eq!(delete_records(&b, "trim", 2), (0, 3), "never moves down");
    assert_eq!(
        delete_records(&b, "trim", 7).0,
        code(ResponseError::OffsetOutOfRange),
        "beyond the high watermark"
    );
    assert_eq!(
        delete_records(&b, "trim", -1),
        (0, 6),
        "-1 means the high watermark"
    );
    assert_eq!(
        b.partition("trim", 0)
            .unwrap()
            .read()
            .log_start_offset()
            .get(),
        6
    );
    assert_eq!(
        delete_records(&b, "trim", -7).0,
        code(ResponseError::OffsetOutOfRange)
    );
    assert_eq!(
        delete_records(&b, "gone", 1),
        (code(ResponseError::UnknownTopicOrPartition), -1)
    );

    b.topics
        .create(
            &b.logs,
            "__transaction_state",
            1,
            LogConfig::default(),
            None,
        )
        .unwrap();
    assert_eq!(
        delete_records(&b, "__transaction_state", -1).0,
        code(ResponseError::InvalidTopicException)
    );

    // The new log start survives a restart.
    drop(b);
    let b = open(dir.path());
    assert_eq!(
        list(&b, list_req("trim", 0, offsets::EARLIEST_TIMESTAMP), 8).1,
        6
    );
}

/// Pinned in the offsets review: equal timestamps over many batches and segments answer the
/// first record at the target; MAX_TIMESTAMP looks only at what truncation and DeleteRecords
/// left (Kafka's `UnifiedLog.fetchOffsetByTimestamp` over the remaining segments).
#[test]
fn list_offsets_by_time_over_equal_timestamps_and_max_after_truncation() {
    let dir = tempfile::tempdir().unwrap();
    let b = open(dir.path());
    let resp = admin::create_topics(
        &b,
        create_req(
            vec![new_topic("eq", 1, 1, &[("segment.bytes", Some("1024"))])],
            false,
        ),
        7,
    );
    assert_eq!(
        resp.topics[0].error_code, 0,
        "{:?}",
        resp.topics[0].error_message
    );
    let t = NOW_MS - 10_000;
    append(&b, "eq", 0, &[t - 1, t - 1]); // 0, 1
    for _ in 0..30 {
        append(&b, "eq", 0, &[t, t]); // 2..62
    }
    assert_eq!(append(&b, "eq", 0, &[t + 9_000]), 62); // the max
    append(&b, "eq", 0, &[t + 5]); // 63
    set_hw(&b, "eq", 64);
    assert!(
        b.partition("eq", 0).unwrap().read().segment_count() > 2,
        "several segments"
    );
    assert_eq!(list(&b, list_req("eq", 0, t), 8).1, 2);
    assert_eq!(list(&b, list_req("eq", 0, t - 5), 8).1, 0);
    assert_eq!(list(&b, list_req("eq", 0, t + 1), 8).1, 62);
    assert_eq!(
        list(&b, list_req("eq", 0, offsets::MAX_TIMESTAMP), 8),
        (0, 62, t + 9_000, 0)
    );

    // The max-timestamp batch truncated away: the max of what is left.
    let h = b.partition("eq", 0).unwrap();
    h.write().truncate_to(Offset(62)).unwrap();
    set_hw(&b, "eq", 62);
    assert_eq!(
        list(&b, list_req("eq", 0, offsets::MAX_TIMESTAMP), 8),
        (0, 2, t, 0)
    );
    assert_eq!(list(&b, list_req("eq", 0, t + 1), 8).1, -1);
    // Deleted below: the first record at the max that is still there.
    assert_eq!(delete_records(&b, "eq", 10), (0, 10));
    assert_eq!(list(&b, list_req("eq", 0, offsets::MAX_TIMESTAMP), 8).1, 10);
    assert_eq!(list(&b, list_req("eq", 0, t - 5), 8).1, 10);
}

/// A partition named twice in one DeleteRecords: Kafka's `handleDeleteRecordsRequest` keys the
/// request by partition (a map), so the last offset named is the one applied and the partition
/// is answered once. It was applied copy by copy — the log start moved to the largest offset
/// named (records the request's last word kept were deleted) — and answered twice.
#[test]
fn delete_records_naming_a_partition_twice_applies_the_last_offset_once() {
    let dir = tempfile::tempdir().unwrap();
    let b = open(dir.path());
    create(&b, "twice", 1);
    for _ in 0..5 {
        append(&b, "twice", 0, &[NOW_MS, NOW_MS]);
    }
    set_hw(&b, "twice", 10);
    let part = |offset| {
        let mut p = DeleteRecordsPartition::default();
        p.partition_index = 0;
        p.offset = offset;
        p
    };
    let mut first = DeleteRecordsTopic::default();
    first.name = tn("twice");
    first.partitions = vec![part(6), part(4)];
    let mut again = DeleteRecordsTopic::default();
    again.name = tn("twice");
    again.partitions = vec![part(3)];
    let mut r = DeleteRecordsRequest::default();
    r.topics = vec![first, again];
    let resp = offsets::delete_records(&b, r, 2);
    encodes(&resp, 2);
    let answered: Vec<(&str, i32, i16, i64)> = resp
        .topics
        .iter()
        .flat_map(|t| {
            t.partitions.iter().map(|p| {
                (
                    str_of(&t.name.0),
                    p.partition_index,
                    p.error_code,
                    p.low_watermark,
                )
            })
        })
        .collect();
    assert_eq!(answered, vec![("twice", 0, 0, 3)]);
    assert_eq!(
        b.partition("twice", 0)
            .unwrap()
            .read()
            .log_start_offset()
            .get(),
        3
    );
}

/// A mirror topic's log start follows its source's (KIP-1279: the destination raises it from
/// the source's on every fetch); a client's DeleteRecords there is a write to a read-only
/// partition, refused READ_ONLY_TOPIC with nothing moved, as Produce is. It moved the log start.
#[test]
fn delete_records_on_a_mirror_topic_is_read_only() {
    let dir = tempfile::tempdir().unwrap();
    let b = open(dir.path());
    create(&b, "mirrored", 1);
    append(&b, "mirrored", 0, &[NOW_MS, NOW_MS]);
    set_hw(&b, "mirrored", 2);
    let tp = mirrorlog_index::TopicPartition {
        topic: "mirrored".into(),
        partition: 0,
    };
    let mut config = b.partition("mirrored", 0).unwrap().read().config().clone();
    config.read_only = true;
    b.logs.update_config(&tp, config).unwrap();
    assert_eq!(
        delete_records(&b, "mirrored", 1),
        (134, -1),
        "READ_ONLY_TOPIC"
    );
    assert_eq!(
        b.partition("mirrored", 0)
            .unwrap()
            .read()
            .log_start_offset()
            .get(),
        0
    );
}

// ---- `__mirror_state` is internal (found in review: clients could grow, trim, delete and create it)

use mirrorlog_mirror::state::{MIRROR_STATE_TOPIC, MirrorStateStore, PartitionMirrorState};

/// The broker's mirror state store, opened as `Mirrors` opens it (same log manager, then a
/// registry refresh).
fn open_state_store(b: &Broker) -> Result<MirrorStateStore, String> {
    let st = MirrorStateStore::open(
        b.logs.clone(),
        mirrorlog_broker::mirrors::MIRROR_STATE_PARTITIONS,
    )
    .map_err(|e| e.to_string())?;
    b.topics.refresh(&b.logs);
    Ok(st)
}

#[test]
fn the_mirror_state_topic_cannot_be_grown_by_clients() {
    let dir = tempfile::tempdir().unwrap();
    let b = open(dir.path());
    drop(open_state_store(&b).unwrap());
    let meta = b
        .topics
        .get(MIRROR_STATE_TOPIC)
        .expect("listed in the registry");
    // CreatePartitions on __mirror_state from any client:
    let grown = grow(&b, MIRROR_STATE_TOPIC, meta.partitions + 1, None, false);
    // Consequence: the store (opened at every start by Mirrors::restore) no longer opens.
    let reopened = open_state_store(&b).map(|_| ());
    assert_eq!(
        (grown, reopened.clone()),
        (code(ResponseError::InvalidTopicException), Ok(())),
        "CreatePartitions on {MIRROR_STATE_TOPIC} answered {grown}; reopening the store: {reopened:?}"
    );
}

#[test]
fn the_mirror_state_topic_cannot_be_deleted_or_trimmed_by_clients() {
    let dir = tempfile::tempdir().unwrap();
    let b = open(dir.path());
    let st = open_state_store(&b).unwrap();
    let mut state = PartitionMirrorState::new("m1", [7; 16], 0);
    state.updated_ms = NOW_MS;
    st.put(&state).unwrap();
    let key = state.key();
    // Which partition holds it, and DeleteRecords to the high watermark there.
    let mut trimmed = vec![];
    for p in 0..mirrorlog_broker::mirrors::MIRROR_STATE_PARTITIONS {
        let mut dp = DeleteRecordsPartition::default();
        dp.partition_index = p;
        dp.offset = -1;
        let mut t = DeleteRecordsTopic::default();
        t.name = tn(MIRROR_STATE_TOPIC);
        t.partitions = vec![dp];
        let mut r = DeleteRecordsRequest::default();
        r.topics = vec![t];
        trimmed.push(offsets::delete_records(&b, r, 2).topics[0].partitions[0].error_code);
    }
    drop(st);
    // Consequence: the state a restart reloads is gone.
    let reloaded = open_state_store(&b).unwrap().get(&key);
    let mut r = DeleteTopicsRequest::default();
    r.topic_names = vec![tn(MIRROR_STATE_TOPIC)];
    let deleted = admin::delete_topics(&b, r, 5).responses[0].error_code;
    assert_eq!(
        (trimmed.iter().all(|c| *c != 0), reloaded.is_some(), deleted),
        (true, true, code(ResponseError::InvalidTopicException)),
        "DeleteRecords answered {trimmed:?}; state after reload: {reloaded:?}; DeleteTopics answered {deleted}"
    );
}

fn big_batch(value_len: usize) -> bytes::Bytes {
    let mut builder = BatchBuilder::new();
    builder.append(
        TimestampMs(NOW_MS),
        None,
        Some(&vec![0u8; value_len][..]),
        &[],
    );
    builder.build().into_bytes()
}

/// IncrementalAlterConfigs segment.bytes applies to existing partitions at once (it used to be
/// acknowledged while the partition kept rolling at the size its active segment was created
/// with, until a restart; found in review).
#[test]
fn altered_segment_bytes_applies_to_existing_partitions() {
    let dir = tempfile::tempdir().unwrap();
    let b = open(dir.path());
    create(&b, "shrink", 1);
    let resp = admin::incremental_alter_configs(
        &b,
        alter_req("shrink", &[("segment.bytes", OP_SET, Some("1000"))], false),
        1,
    );
    assert_eq!(resp.responses[0].error_code, 0);
    assert_eq!(topic_config(&b, "shrink", "segment.bytes").0, "1000");
    let h = b.partition("shrink", 0).unwrap();
    for _ in 0..20 {
        h.append_as_leader_durable(big_batch(200), LeaderEpoch(0), LeaderOrigin::Client)
            .unwrap();
    }
    let files = std::fs::read_dir(dir.path().join("shrink-0"))
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".log"))
        .count();
    assert!(
        files >= 5,
        "20 batches of ~270 bytes with segment.bytes=1000: {files} segment(s)"
    );
}

/// A client creating (or Metadata auto-creating) `__mirror_state` before the first mirror.
#[test]
fn clients_cannot_create_the_mirror_state_topic() {
    let dir = tempfile::tempdir().unwrap();
    let b = open(dir.path());
    let created = admin::create_topics(
        &b,
        create_req(vec![new_topic(MIRROR_STATE_TOPIC, 1, 1, &[])], false),
        7,
    )
    .topics[0]
        .error_code;
    let store = open_state_store(&b).map(|_| ());
    assert!(
        created != 0 && store.is_ok(),
        "CreateTopics {MIRROR_STATE_TOPIC} answered {created}; the mirror state store then: {store:?}"
    );
}

/// A produce that looked its partition up just before a DeleteTopics and appends after it: the
/// append is refused (UNKNOWN_TOPIC_OR_PARTITION) and the data directory stays online. It used
/// to write on, and a segment roll into the removed directory failed as a storage error that
/// took the whole data directory offline (found in review).
#[test]
fn an_append_racing_a_topic_delete_does_not_take_the_data_dir_offline() {
    let dir = tempfile::tempdir().unwrap();
    let b = open(dir.path());
    create(&b, "other", 1);
    let req = create_req(
        vec![new_topic("doomed", 1, 1, &[("segment.bytes", Some("300"))])],
        false,
    );
    assert_eq!(admin::create_topics(&b, req, 7).topics[0].error_code, 0);
    let batch = || {
        let mut builder = BatchBuilder::new();
        builder.append(TimestampMs(NOW_MS), None, Some(&[0u8; 200][..]), &[]);
        builder.build().into_bytes()
    };
    let h = b.partition("doomed", 0).unwrap();
    h.append_as_leader_durable(batch(), LeaderEpoch(0), LeaderOrigin::Client)
        .unwrap();
    // DeleteTopics lands between the produce's lookup and its append.
    let mut r = DeleteTopicsRequest::default();
    r.topic_names = vec![tn("doomed")];
    assert_eq!(admin::delete_topics(&b, r, 5).responses[0].error_code, 0);
    let late = h.append_as_leader_durable(batch(), LeaderEpoch(0), LeaderOrigin::Client);
    drop(h);
    let other_online = b.partition("other", 0).unwrap().check_online();
    // The renamed `doomed-0.<id>-delete` stays for `file.delete.delay.ms`, as Kafka's.
    let leftovers: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("doomed") && !n.ends_with("-delete"))
        .collect();
    assert!(
        matches!(
            late,
            Err(mirrorlog_engine::error::EngineError::PartitionDeleted(_))
        ),
        "late append: {late:?}"
    );
    assert!(
        other_online.is_ok() && leftovers.is_empty(),
        "late append: {late:?}; unrelated partition: {other_online:?}; offline dirs: {:?}; leftovers: {leftovers:?}",
        b.logs.offline_dirs()
    );
}

#[test]
fn a_resource_named_twice_is_answered_once_with_invalid_request_and_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let b = open(dir.path());
    // CreateTopics: "twice" appears twice, "once" once.
    let resp = admin::create_topics(
        &b,
        create_req(
            vec![
                new_topic("twice", 1, 1, &[]),
                new_topic("once", 2, 1, &[]),
                new_topic("twice", 3, 1, &[]),
            ],
            false,
        ),
        7,
    );
    let got: Vec<(&str, i16)> = resp
        .topics
        .iter()
        .map(|t| (str_of(&t.name.0), t.error_code))
        .collect();
    assert_eq!(
        got,
        [("twice", code(ResponseError::InvalidRequest)), ("once", 0)]
    );
    assert!(
        b.topics.get("twice").is_none(),
        "a duplicate is not created"
    );
    assert_eq!(b.topics.get("once").unwrap().partitions, 2);

    // CreatePartitions: the same topic twice grows nothing.
    let mut r = CreatePartitionsRequest::default();
    r.timeout_ms = 30_000;
    for count in [4, 5] {
        let mut t = CreatePartitionsTopic::default();
        t.name = tn("once");
        t.count = count;
        r.topics.push(t);
    }
    let resp = admin::create_partitions(&b, r, 3);
    assert_eq!(resp.results.len(), 1);
    assert_eq!(
        resp.results[0].error_code,
        code(ResponseError::InvalidRequest)
    );
    assert_eq!(b.topics.get("once").unwrap().partitions, 2);

    // IncrementalAlterConfigs: one resource twice changes nothing.
    let mut r = alter_req("once", &[("retention.ms", OP_SET, Some("1000"))], false);
    let second = alter_req("once", &[("retention.ms", OP_SET, Some("2000"))], false);
    r.resources.extend(second.resources);
    let resp = admin::incremental_alter_configs(&b, r, 1);
    assert_eq!(resp.responses.len(), 1);
    assert_eq!(
        resp.responses[0].error_code,
        code(ResponseError::InvalidRequest)
    );
    assert_eq!(
        topic_config(&b, "once", "retention.ms"),
        ("604800000".into(), SOURCE_DEFAULT_CONFIG)
    );
}
