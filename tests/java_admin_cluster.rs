//! Kafka's Java AdminClient (kafka-clients 4.3.0) describes a `mirrorlog serve` node:
//! describeCluster with authorized operations, describeFeatures (`metadata.version` 3.8-IV0 alone:
//! no transactions v2, no KIP-848 groups) and updateFeatures (refused), and describeLogDirs /
//! describeReplicaLogDirs (DescribeLogDirs, API 35: the data directory, its space and each
//! partition's size) (`AdminScenarios cluster`).

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
    let data = std::path::absolute(dir.path())
        .unwrap()
        .display()
        .to_string();
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
            // metadata.version 3.8-IV0 only: every other feature is at level 0 here, which
            // Kafka lists neither as supported nor as finalized (`broker/src/features.rs`).
            ("features.finalized", "[metadata.version=20..20]"),
            ("features.supported", "[metadata.version=20..20]"),
            ("features.epoch", "Optional[0]"),
            // `kafka-features.sh upgrade`: UpdateFeatures is not advertised.
            ("features.update", "UnsupportedVersionException"),
            ("logdirs.count", "1"),
            // Ten one-record batches of 76 bytes in d1-1; sizes from the files, no lag.
            (
                "logdir",
                &format!(
                    "{data} error=none total_set=true usable_set=true \
                     d1={{d1-0=0:0:false, d1-1=760:0:false}}"
                ),
            ),
            ("replica_logdirs", &format!("current={data} future=null")),
        ],
    );
    assert_eq!(broker.stop(), Some(0), "clean exit on SIGTERM");
}
