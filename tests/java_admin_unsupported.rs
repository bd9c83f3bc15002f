//! The Java AdminClient (kafka-clients 4.3.0) calls whose APIs `mirrorlog serve` does not
//! advertise in ApiVersions (ACLs, the KRaft quorum, reassignments, leader elections, quotas,
//! SCRAM credentials, delegation tokens, client metrics, share groups, replica moves between
//! log dirs, feature updates, config resource listing): each fails at once with
//! UnsupportedVersionException rather than waiting out its timeout
//! (`AdminScenarios unsupported`; a hang would print TimeoutException).

mod common;

use common::java::{JavaClient, assert_printed};
use common::{Serve, free_port};

#[test]
fn admin_calls_the_broker_does_not_implement_fail_at_once() {
    let Some(java) = JavaClient::compile("AdminScenarios") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut broker = Serve::start(dir.path(), free_port());
    let out = java.run(&["unsupported", &broker.addr]);
    let calls = [
        "describe_acls",
        "describe_quorum",
        "list_reassignments",
        "elect_leaders",
        "describe_client_quotas",
        "describe_scram",
        "describe_tokens",
        "list_client_metrics",
        "describe_share_groups",
        "alter_replica_log_dirs",
        "update_features",
        "list_config_resources",
    ];
    let expected: Vec<(&str, &str)> = calls
        .iter()
        .map(|c| (*c, "UnsupportedVersionException"))
        .collect();
    assert_printed(&out, &expected);
    assert_eq!(broker.stop(), Some(0), "clean exit on SIGTERM");
}
