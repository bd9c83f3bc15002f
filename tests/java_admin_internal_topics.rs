//! The Java AdminClient (kafka-clients 4.3.0) on `mirrorlog serve`'s internal topics and
//! authorized operations: describeTopics with authorized operations (no authorizer: every topic
//! operation), `__consumer_offsets` described as internal, and the deliberate single-node
//! refusals of `handlers/admin.rs` (deleting it, adding partitions, DeleteRecords: its
//! coordinator depends on every record), its infinite retention (`AdminScenarios internal`).

mod common;

use common::java::{JavaClient, assert_printed};
use common::{Serve, free_port};

#[test]
fn the_java_admin_client_sees_internal_topics_protected() {
    let Some(java) = JavaClient::compile("AdminScenarios") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut broker = Serve::start(dir.path(), free_port());
    let out = java.run(&["internal", &broker.addr]);
    assert_printed(
        &out,
        &[
            (
                "topic.authorized_operations",
                "[ALTER, ALTER_CONFIGS, CREATE, DELETE, DESCRIBE, DESCRIBE_CONFIGS, READ, WRITE]",
            ),
            ("offsets_topic", "internal=true partitions=8"),
            ("delete.offsets_topic", "InvalidTopicException"),
            ("delete_records.offsets_topic", "InvalidTopicException"),
            ("partitions.offsets_topic", "InvalidTopicException"),
            ("configs.offsets_topic.retention.ms", "-1"),
        ],
    );
    assert_eq!(broker.stop(), Some(0), "clean exit on SIGTERM");
}
