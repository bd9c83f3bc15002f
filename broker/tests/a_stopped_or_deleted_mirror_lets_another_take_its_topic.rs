//! Scenario: the one-owner rule of cluster mirrors (TOPIC_ALREADY_IN_CLUSTER_MIRROR) lets go of a
//! topic when its owner no longer writes it: after `east` stops `orders` (failover) a second
//! mirror of the same source may start it, and `east` may then not take it back; after the
//! owner is deleted, another mirror may start it too.

use mirrorlog_broker::broker::Broker;
use mirrorlog_broker::client::Client;
use mirrorlog_broker::errors::MirrorErrorCode;
use mirrorlog_broker::handlers::mirror_admin::handle;
use mirrorlog_broker::mirror_rpc::{
    DeleteClusterMirrorRequest, MirrorRequest, MirrorResponse, MirrorTopicsRequest,
    MirrorTopicsResponse, StartMirrorTopicsRequest, StartTopic, TopicName,
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
fn a_stopped_topic_goes_to_the_next_mirror_and_a_deleted_mirror_leaves_its_topics() {
    let dir = tempfile::tempdir().unwrap();
    let src = RunningBroker::start_local(&dir.path().join("src"), 1).unwrap();
    Client::connect(&src.addr.to_string())
        .unwrap()
        .create_topic("orders", 1, &[])
        .unwrap();
    let dst = RunningBroker::start_local(&dir.path().join("dst"), 2).unwrap();
    let b = dst.broker.clone();
    for name in ["east", "west", "north"] {
        let configs = BTreeMap::from([("bootstrap.servers".to_string(), src.addr.to_string())]);
        b.mirrors.create_durable(&b, name, configs).unwrap();
    }
    let taken = MirrorErrorCode::TopicAlreadyInClusterMirror.code();

    assert_eq!(start(&b, "east"), 0);
    assert_eq!(start(&b, "west"), taken);
    // Failover on east: west may take it, and then east may not take it back.
    assert_eq!(stop(&b, "east"), 0);
    assert_eq!(b.mirrors.topic_owner("orders"), None);
    assert_eq!(start(&b, "west"), 0);
    assert_eq!(b.mirrors.topic_owner("orders").as_deref(), Some("west"));
    assert_eq!(start(&b, "east"), taken);
    assert_eq!(start(&b, "north"), taken);

    // West stops it and is deleted: north may take it.
    assert_eq!(stop(&b, "west"), 0);
    let r = handle(
        &b,
        MirrorRequest::DeleteClusterMirror(DeleteClusterMirrorRequest {
            mirror_name: "west".into(),
            state_offset: -1,
        }),
    );
    match r {
        MirrorResponse::DeleteClusterMirror(r) => assert_eq!(r.error_code, 0, "{r:?}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(start(&b, "north"), 0);
    assert_eq!(b.mirrors.topic_owner("orders").as_deref(), Some("north"));
    drop(b);
    dst.shutdown().unwrap();
    src.shutdown().unwrap();
}
