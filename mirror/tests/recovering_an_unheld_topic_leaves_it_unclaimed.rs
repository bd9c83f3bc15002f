//! Scenario: a recover (`--recover`) of a topic the mirror does not hold. It claimed the topic
//! before finding out, and the error left the claim in place: no other mirror could start the
//! topic (TOPIC_ALREADY_IN_CLUSTER_MIRROR naming a mirror that does not mirror it), and nothing
//! released it short of deleting the mirror.

use crate::common;

use common::{Dest, T0, manager};
use mirrorlog_engine::clock::ManualClock;
use mirrorlog_engine::config::LogConfig;
use mirrorlog_index::{TopicId, TopicPartition};
use mirrorlog_mirror::claims::TopicClaims;
use mirrorlog_mirror::engine_source::EngineSource;
use mirrorlog_mirror::manager::{MirrorConfig, MirrorManager};
use mirrorlog_mirror::state::MirrorStateStore;
use std::sync::Arc;

#[test]
fn recovering_a_topic_the_mirror_does_not_hold_leaves_it_unclaimed() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (src, dst) = (manager(a.path()), manager(b.path()));
    let orders = TopicPartition {
        topic: "orders".into(),
        partition: 0,
    };
    src.create(&orders, TopicId([1; 16]), LogConfig::default())
        .unwrap();
    let source = EngineSource::new(src.clone(), "source-cluster", 1);
    let store = Arc::new(MirrorStateStore::open(dst.clone(), 4).unwrap());
    let claims = Arc::new(TopicClaims::new());
    let mirror = |name: &str| {
        MirrorManager::new_with_claims(
            MirrorConfig::new(name),
            source.clone(),
            dst.clone(),
            Arc::new(Dest(dst.clone())),
            store.clone(),
            ManualClock::new(T0),
            claims.clone(),
        )
        .unwrap()
    };

    let east = mirror("east");
    assert!(
        east.recover_topic("orders").is_err(),
        "east holds no orders"
    );
    assert_eq!(claims.owner("orders"), None, "claimed by a failed recover");
    mirror("west")
        .start_topics(&["orders".into()])
        .expect("nobody mirrors orders");
}
