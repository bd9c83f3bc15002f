//! Scenario: a client deletes a mirror topic on the destination (DeleteTopics does not refuse
//! it). Its mirror's StopMirrorTopics then failed (no destination log; and the broker refuses to
//! make an unknown topic writable), so the topic stayed claimed for ever: no other mirror could
//! start it (TOPIC_ALREADY_IN_CLUSTER_MIRROR) and the mirror could not be deleted. Now the stop
//! succeeds with nothing to write and the topic is free again.

use crate::common;

use common::mirror::{source_and_destination, start_orders as start, stop_orders as stop};
use mirrorlog_broker::client::Client;
use mirrorlog_broker::errors::MirrorErrorCode;

#[test]
fn a_mirror_topic_a_client_deleted_can_be_stopped_and_started_by_another_mirror() {
    let dir = tempfile::tempdir().unwrap();
    let (src, dst) = source_and_destination(dir.path(), &["east", "west"]);
    let b = dst.broker.clone();
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
