//! The group and transaction coordinators run with the broker's settings
//! (`BrokerConfig::group`, `BrokerConfig::txn`, which `mirrorlog serve` fills from Kafka's
//! `server.properties` keys). They used to be opened with their defaults whatever the broker
//! was given, so `group.max.session.timeout.ms`, `transaction.max.timeout.ms`,
//! `offsets.topic.num.partitions` and the rest could not be set.

use crate::common;

use bytes::Bytes;
use common::internal_topics::call;
use kafka_protocol::ResponseError;
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::{
    ApiKey, GroupId, InitProducerIdRequest, JoinGroupRequest, RequestKind, ResponseKind,
    TransactionalId,
};
use kafka_protocol::protocol::StrBytes;
use mirrorlog_broker::broker::{Broker, BrokerConfig};
use mirrorlog_engine::clock::ManualClock;
use std::sync::Arc;

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

/// A broker on `dir` with both coordinators installed, its settings changed by `f`.
fn broker_with(dir: &std::path::Path, f: impl FnOnce(&mut BrokerConfig)) -> Arc<Broker> {
    let mut config = BrokerConfig::new(dir, "127.0.0.1", 9092);
    config.cluster_id = Some("test-cluster".into());
    f(&mut config);
    let b = Arc::new(
        Broker::open(
            config,
            mirrorlog_segment::io::default_storage(),
            ManualClock::new(1_700_000_000_000),
        )
        .unwrap(),
    );
    b.register_arc();
    mirrorlog_broker::coordinators::install(&b).unwrap();
    b
}

fn join_error(b: &Broker, session_timeout_ms: i32) -> i16 {
    let req = JoinGroupRequest::default()
        .with_group_id(GroupId(s("g")))
        .with_session_timeout_ms(session_timeout_ms)
        .with_rebalance_timeout_ms(30_000)
        .with_member_id(s(""))
        .with_protocol_type(s("consumer"))
        .with_protocols(vec![
            JoinGroupRequestProtocol::default()
                .with_name(s("range"))
                .with_metadata(Bytes::from_static(b"sub")),
        ]);
    match call(b, ApiKey::JoinGroup, 9, RequestKind::JoinGroup(req)) {
        ResponseKind::JoinGroup(r) => r.error_code,
        other => panic!("{other:?}"),
    }
}

fn init_error(b: &Broker, transaction_timeout_ms: i32) -> i16 {
    let mut r = InitProducerIdRequest::default();
    r.transactional_id = Some(TransactionalId(s("t")));
    r.transaction_timeout_ms = transaction_timeout_ms;
    match call(b, ApiKey::InitProducerId, 4, r.into()) {
        ResponseKind::InitProducerId(r) => r.error_code,
        other => panic!("{other:?}"),
    }
}

#[test]
fn group_max_session_timeout_ms_refuses_a_longer_session() {
    let dir = tempfile::tempdir().unwrap();
    // 60 s is within the default maximum (30 minutes).
    let b = broker_with(dir.path(), |_| {});
    assert_eq!(
        join_error(&b, 60_000),
        ResponseError::MemberIdRequired.code()
    );
    drop(b);
    let dir = tempfile::tempdir().unwrap();
    let b = broker_with(dir.path(), |c| {
        c.group.group_max_session_timeout_ms = 30_000
    });
    assert_eq!(
        join_error(&b, 60_000),
        ResponseError::InvalidSessionTimeout.code()
    );
    assert_eq!(
        join_error(&b, 30_000),
        ResponseError::MemberIdRequired.code()
    );
}

#[test]
fn transaction_max_timeout_ms_refuses_a_longer_transaction_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let b = broker_with(dir.path(), |c| c.txn.transaction_max_timeout_ms = 60_000);
    assert_eq!(
        init_error(&b, 120_000),
        ResponseError::InvalidTransactionTimeout.code()
    );
    assert_eq!(init_error(&b, 60_000), 0);
}

#[test]
fn internal_topics_get_the_configured_partition_counts() {
    let dir = tempfile::tempdir().unwrap();
    let b = broker_with(dir.path(), |c| {
        c.group.offsets_topic_partitions = 3;
        c.txn.transaction_state_partitions = 2;
    });
    let count = |topic: &str| {
        (0..)
            .take_while(|&p| b.partition(topic, p).is_some())
            .count()
    };
    assert_eq!(count("__consumer_offsets"), 3);
    assert_eq!(count("__transaction_state"), 2);
}

#[test]
fn an_out_of_range_coordinator_setting_stops_the_broker_opening() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = BrokerConfig::new(dir.path(), "127.0.0.1", 9092);
    config.txn.transaction_max_timeout_ms = 0;
    let e = Broker::open(
        config,
        mirrorlog_segment::io::default_storage(),
        ManualClock::new(0),
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("transaction.max.timeout.ms = 0 is outside 1..="),
        "{e}"
    );
}
