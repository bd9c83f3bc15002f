//! Scenario: a client deletes a mirror topic on the destination (DeleteTopics does not refuse
//! it). Its mirror's StopMirrorTopics then failed (no destination log; and the broker refuses to
//! make an unknown topic writable), so the topic stayed claimed for ever: no other mirror could
//! start it (TOPIC_ALREADY_IN_CLUSTER_MIRROR) and the mirror could not be deleted. Now the stop
//! succeeds with nothing to write and the topic is free again.

use mirrorlog_broker::broker::Broker;
use mirrorlog_broker::client::Client;
use mirrorlog_broker::errors::MirrorErrorCode;
use mirrorlog_broker::handlers::mirror_admin::handle;
use mirrorlog_broker::mirror_rpc::{
    MirrorRequest, MirrorResponse, MirrorTopicsRequest, MirrorTopicsResponse,
    StartMirrorTopicsRequest, StartTopic, TopicName,
};
use mirrorlog_broker::running::RunningBroker;
use std::collections::BTreeMap;
use std::sync::Arc;

fn start(b: &Arc<Broker>, mirror: &str) -> i16 {
    let r = handle(
        b,
        MirrorRequest::StartMirrorTopics(StartMirrorTopicsRequest {
            mirror_name: mirror.into(),
            topics: vec![StartTopic {
                name: "orders".into(),
                topic_id: [0; 16],
                num_partitions: -1,
            }],
            timeout_ms: 30_000,
            ..Default::default()
        }),
    );
    match r {
        MirrorResponse::StartMirrorTopics(r) => code(&r),
        other => panic!("{other:?}"),
    }
}

fn stop(b: &Arc<Broker>, mirror: &str) -> i16 {
    let r = handle(
        b,
        MirrorRequest::StopMirrorTopics(MirrorTopicsRequest {
            mirror_name: mirror.into(),
            topics: vec![TopicName {
                name: "orders".into(),
            }],
            state_offset: -1,
            ..Default::default()
        }),
    );
    match r {
        MirrorResponse::StopMirrorTopics(r) => code(&r),
        other => panic!("{other:?}"),
    }
}

fn code(r: &MirrorTopicsResponse) -> i16 {
    assert_eq!(r.error_code, 0, "{r:?}");
    assert_eq!(r.topics.len(), 1, "{r:?}");
    r.topics[0].error_code
}

#[test]
fn a_mirror_topic_a_client_deleted_can_be_stopped_and_started_by_another_mirror() {
    let dir = tempfile::tempdir().unwrap();
    let src = RunningBroker::start_local(&dir.path().join("src"), 1).unwrap();
    Client::connect(&src.addr.to_string())
        .unwrap()
        .create_topic("orders", 1, &[])
        .unwrap();
    let dst = RunningBroker::start_local(&dir.path().join("dst"), 2).unwrap();
    let b = dst.broker.clone();
    for name in ["east", "west"] {
        let configs = BTreeMap::from([("bootstrap.servers".to_string(), src.addr.to_string())]);
        b.mirrors.create_durable(&b, name, configs).unwrap();
    }
    assert_eq!(start(&b, "east"), 0);
    Client::connect(&dst.addr.to_string())
        .unwrap()
        .delete_topic("orders")
        .unwrap();
    assert!(b.topics.get("orders").is_none());
    let taken = MirrorErrorCode::TopicAlreadyInClusterMirror.code();
    assert_eq!(start(&b, "west"), taken, "east has not stopped it");

    assert_eq!(
        stop(&b, "east"),
        0,
        "the stop of a deleted mirror topic failed"
    );
    assert_eq!(
        b.mirrors.topic_owner("orders"),
        None,
        "still claimed by east"
    );
    assert_eq!(start(&b, "west"), 0);
    assert_eq!(b.mirrors.topic_owner("orders").as_deref(), Some("west"));
    drop(b);
    dst.shutdown().unwrap();
    src.shutdown().unwrap();
}
