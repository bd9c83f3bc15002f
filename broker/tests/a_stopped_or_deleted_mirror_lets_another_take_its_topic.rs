//! Scenario: the one-owner rule of cluster mirrors (TOPIC_ALREADY_IN_CLUSTER_MIRROR) lets go of a
//! topic when its owner no longer writes it: after `east` stops `orders` (failover) a second
//! mirror of the same source may start it, and `east` may then not take it back; after the
//! owner is deleted, another mirror may start it too.

use crate::common;

use common::mirror::{source_and_destination, start_orders as start, stop_orders as stop};
use mirrorlog_broker::errors::MirrorErrorCode;
use mirrorlog_broker::handlers::mirror_admin::handle;
use mirrorlog_broker::mirror_rpc::{DeleteClusterMirrorRequest, MirrorRequest, MirrorResponse};

#[test]
fn a_stopped_topic_goes_to_the_next_mirror_and_a_deleted_mirror_leaves_its_topics() {
    let dir = tempfile::tempdir().unwrap();
    let (src, dst) = source_and_destination(dir.path(), &["east", "west", "north"]);
    let b = dst.broker.clone();
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
