//! Scenario: two cluster mirrors of the *same* source cluster, `east` and `west`, whose
//! patterns both match source topic `orders`. The guard against a second writer compared topic
//! ids, which are equal here, so `--start --pattern` on `east` (and its discovery at every
//! refresh) took the topic `west` was filling: two fetchers appending to one log. KIP-1279: a
//! topic belongs to one mirror; starting it on another fails with
//! TOPIC_ALREADY_IN_CLUSTER_MIRROR unless the first has STOPPED it. The owner also survives a
//! restart: every mirror's partitions are restored and claimed before any mirror runs.

use crate::common;

use common::mirror::source_and_destination;
use mirrorlog_broker::broker::Broker;
use mirrorlog_broker::errors::MirrorErrorCode;
use mirrorlog_broker::handlers::mirror_admin::handle;
use mirrorlog_broker::mirror_rpc::{
    MirrorRequest, MirrorResponse, MirrorTopicsResponse, StartMirrorTopicsRequest, StartTopic,
};
use mirrorlog_broker::running::RunningBroker;
use mirrorlog_mirror::state::MirrorPartitionState as S;
use std::sync::Arc;

fn start(
    b: &Arc<Broker>,
    mirror: &str,
    topics: &[&str],
    patterns: &[&str],
) -> MirrorTopicsResponse {
    let r = handle(
        b,
        MirrorRequest::StartMirrorTopics(StartMirrorTopicsRequest {
            mirror_name: mirror.into(),
            topics: topics
                .iter()
                .map(|t| StartTopic {
                    name: (*t).into(),
                    topic_id: [0; 16],
                    num_partitions: -1,
                })
                .collect(),
            include_patterns: patterns.iter().map(|p| p.to_string()).collect(),
            timeout_ms: 30_000,
            ..Default::default()
        }),
    );
    match r {
        MirrorResponse::StartMirrorTopics(r) => r,
        other => panic!("{other:?}"),
    }
}

/// The answer's code for `orders`.
fn orders_code(r: &MirrorTopicsResponse) -> i16 {
    assert_eq!(r.error_code, 0, "{r:?}");
    r.topics
        .iter()
        .find(|t| t.name == "orders")
        .unwrap_or_else(|| panic!("no answer for orders: {r:?}"))
        .error_code
}

fn states(b: &Broker, mirror: &str) -> Vec<S> {
    b.mirrors.get(mirror).unwrap().topic_states("orders")
}

#[test]
fn a_topic_both_mirrors_patterns_match_has_one_writer_across_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let (src, dst) = source_and_destination(dir.path(), &["east", "west"]);
    let b = dst.broker.clone();
    let taken = MirrorErrorCode::TopicAlreadyInClusterMirror.code();

    assert_eq!(orders_code(&start(&b, "west", &[], &["ord.*"])), 0);
    assert!(!states(&b, "west").is_empty());
    let r = start(&b, "east", &[], &["ord.*"]);
    assert!(
        states(&b, "east").is_empty(),
        "east took orders, which west mirrors: {r:?}"
    );
    assert_eq!(orders_code(&r), taken, "{r:?}");
    assert_eq!(orders_code(&start(&b, "east", &["orders"], &[])), taken);
    let east = b.mirrors.get("east").unwrap();
    assert!(east.discover().unwrap().is_empty(), "discovery took it");
    assert!(states(&b, "east").is_empty());
    assert_eq!(b.mirrors.topic_owner("orders").as_deref(), Some("west"));

    // A restart: both come back with their patterns; west keeps orders and east still may not
    // take it. (The owner is the mirror second by name on purpose: mirrors are restored in
    // name order, and east running before west's partitions were claimed could take it.)
    drop((b, east));
    dst.shutdown().unwrap();
    let dst = RunningBroker::start_local(&dir.path().join("dst"), 2).unwrap();
    let b = dst.broker.clone();
    assert_eq!(b.mirrors.topic_owner("orders").as_deref(), Some("west"));
    assert!(states(&b, "west").iter().all(|s| *s != S::Stopped));
    let east = b.mirrors.get("east").unwrap();
    assert!(east.is_included("orders"), "the pattern came back");
    assert!(east.discover().unwrap().is_empty(), "discovery took it");
    assert!(states(&b, "east").is_empty());
    assert_eq!(orders_code(&start(&b, "east", &["orders"], &[])), taken);
    drop((b, east));
    dst.shutdown().unwrap();
    src.shutdown().unwrap();
}
