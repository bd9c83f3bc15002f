//! Kafka's Java AdminClient (kafka-clients 4.3.0) describes a `mirrorlog serve` node:
//! describeCluster with authorized operations, describeFeatures (no feature is finalized: the
//! broker implements transaction and group protocol versions 1 only), and describeLogDirs /
//! describeReplicaLogDirs (`AdminScenarios cluster`).

mod common;

use common::java::{JavaClient, assert_printed};
use common::{Serve, free_port};

#[test]
fn the_java_admin_client_describes_the_node_its_features_and_log_dirs() {
    let Some(java) = JavaClient::compile("AdminScenarios") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let mut broker = Serve::start(dir.path(), port);
    let out = java.run(&["cluster", &broker.addr]);
    assert_printed(
        &out,
        &[
            ("cluster.id_set", "true"),
            ("cluster.nodes", &format!("[1@127.0.0.1:{port}]")),
            ("cluster.controller", "1"),
            (
                "cluster.authorized_operations",
                "[ALTER, ALTER_CONFIGS, CLUSTER_ACTION, CREATE, DESCRIBE, DESCRIBE_CONFIGS, IDEMPOTENT_WRITE]",
            ),
            ("features.finalized", "[]"),
            ("features.supported", "[]"),
            ("features.epoch", "Optional.empty"),
            // Not advertised in ApiVersions: refused at once, no hang.
            ("logdirs", "UnsupportedVersionException"),
            ("replica_logdirs", "UnsupportedVersionException"),
        ],
    );
    assert_eq!(broker.stop(), Some(0), "clean exit on SIGTERM");
}
