//! `meta.properties` ties a data directory to one node and one cluster, as Kafka's
//! `MetaPropertiesEnsemble` checks at start: a stored `node.id` other than the broker's, or a
//! configured cluster id other than the stored one, refuses the start. A configured id is stored
//! on the first start, so a later start without it keeps the same cluster id. Before, a
//! configured `--cluster-id` silently replaced the stored one (mirrors of this cluster then saw
//! a changed source cluster) and `node.id` was never checked.

use mirrorlog_broker::broker::{Broker, BrokerConfig};
use mirrorlog_engine::clock::ManualClock;
use mirrorlog_segment::io::PwriteStorage;
use std::path::Path;
use std::sync::Arc;

fn open(dir: &Path, node_id: i32, cluster_id: Option<&str>) -> anyhow::Result<Broker> {
    let mut config = BrokerConfig::new(dir, "127.0.0.1", 9092);
    config.node_id = node_id;
    config.cluster_id = cluster_id.map(str::to_string);
    Broker::open(
        config,
        Arc::new(PwriteStorage::new()),
        ManualClock::new(1_700_000_000_000),
    )
}

#[test]
fn a_data_dir_keeps_its_node_and_cluster() {
    let dir = tempfile::tempdir().unwrap();
    let b = open(dir.path(), 3, Some("first-cluster")).unwrap();
    assert_eq!(b.cluster_id, "first-cluster");
    b.shutdown().unwrap();

    // Without a configured id, the stored one.
    let b = open(dir.path(), 3, None).unwrap();
    assert_eq!(b.cluster_id, "first-cluster");
    b.shutdown().unwrap();

    let e = open(dir.path(), 3, Some("other-cluster"))
        .expect_err("another cluster id is refused")
        .to_string();
    assert!(
        e.contains("first-cluster") && e.contains("other-cluster"),
        "{e}"
    );

    let e = open(dir.path(), 4, None)
        .expect_err("another node id is refused")
        .to_string();
    assert!(e.contains("node.id"), "{e}");

    // The same configuration still starts.
    let b = open(dir.path(), 3, Some("first-cluster")).unwrap();
    assert_eq!(b.cluster_id, "first-cluster");
}
