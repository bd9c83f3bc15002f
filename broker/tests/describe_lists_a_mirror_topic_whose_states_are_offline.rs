//! Bug: a mirror topic all of whose partition states live in a `__mirror_state` partition that
//! was in an offline data directory at start is not restored, so its mirror does not know it
//! holds the topic, and DescribeClusterMirrors and ListClusterMirrors left it out: the topic
//! stayed read-only, and its start and the configs the mirror copies answered
//! `KAFKA_STORAGE_ERROR` on account of a mirror that did not list it. Now the mirror whose
//! states of the topic are unavailable lists it, its partitions FAILED (not retryable) with a
//! reason naming the offline directory; the topics it restored are listed as before.

use crate::common;

use common::mirror::{OfflineStateTopic, mirror_topic_whose_states_are_offline};
use common::two_dir_broker::close;
use mirrorlog_broker::broker::Broker;
use mirrorlog_broker::handlers::mirror_admin::handle;
use mirrorlog_broker::mirror_rpc::{
    DescribeClusterMirrorsRequest, ListClusterMirrorsRequest, MirrorRequest, MirrorResponse,
};
use mirrorlog_engine::config::LogConfig;
use mirrorlog_mirror::state::MirrorPartitionState as S;
use mirrorlog_segment::io::SimStorage;
use std::sync::Arc;

const MIRROR: &str = "m";

fn list_topics(b: &Arc<Broker>) -> Vec<String> {
    let r = handle(
        b,
        MirrorRequest::ListClusterMirrors(ListClusterMirrorsRequest {
            include_topic_names: true,
        }),
    );
    match r {
        MirrorResponse::ListClusterMirrors(r) => {
            assert_eq!(r.mirrors.len(), 1, "{r:?}");
            r.mirrors[0].topic_names.clone()
        }
        other => panic!("{other:?}"),
    }
}

/// DescribeClusterMirrors of every mirror: (topic, partition, state, error message, retry
/// attempt) of the one mirror's partitions.
fn describe(b: &Arc<Broker>) -> Vec<(String, i32, String, Option<String>, i16)> {
    let r = handle(
        b,
        MirrorRequest::DescribeClusterMirrors(DescribeClusterMirrorsRequest {
            mirror_names: None,
            ..Default::default()
        }),
    );
    let MirrorResponse::DescribeClusterMirrors(r) = r else {
        panic!("{r:?}");
    };
    assert_eq!(r.mirrors.len(), 1, "{r:?}");
    assert_eq!(r.mirrors[0].error_code, 0, "{r:?}");
    r.mirrors[0]
        .topics
        .iter()
        .flat_map(|t| {
            t.partitions.iter().map(|p| {
                (
                    t.topic_name.clone(),
                    p.partition_index,
                    p.state_value.clone(),
                    p.error_message.clone(),
                    p.retry_attempt,
                )
            })
        })
        .collect()
}

#[test]
fn describe_lists_a_mirror_topic_whose_states_are_offline() {
    let root = tempfile::tempdir().unwrap();
    let sim = Arc::new(SimStorage::new());
    let mirrored = |b: &Broker| {
        let m = b.mirrors.get(MIRROR).unwrap();
        m.describe().iter().all(|p| p.state == S::Mirroring)
    };
    let OfflineStateTopic {
        src,
        dst: b,
        topic,
        bad,
        kept,
    } = mirror_topic_whose_states_are_offline(
        root.path(),
        &sim,
        MIRROR,
        &LogConfig::default(),
        mirrored,
    );
    assert!(!kept.is_empty(), "the scenario needs a restored topic");

    let described = describe(&b);
    let (_, _, state, message, retry) = described
        .iter()
        .find(|(t, p, ..)| *t == topic && *p == 0)
        .unwrap_or_else(|| panic!("{topic} is not described: {described:?}"));
    assert_eq!(state, "FAILED", "{described:?}");
    let message = message.clone().unwrap_or_default();
    assert!(
        message.contains(bad.to_str().unwrap()) && message.contains("__mirror_state"),
        "{message}"
    );
    assert_eq!(*retry, -1);
    for t in &kept {
        assert!(
            described.iter().any(|(name, ..)| name == t),
            "{t} is not described: {described:?}"
        );
    }
    let listed = list_topics(&b);
    assert!(listed.contains(&topic), "{listed:?}");
    assert!(kept.iter().all(|t| listed.contains(t)), "{listed:?}");
    close(b);
    drop(src);
}
