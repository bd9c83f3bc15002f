//! Kafka's own Java AdminClient (kafka-clients 4.3.0) describes a `mirrorlog serve` cluster:
//! the smoke test of the Java client harness (`tests/common/java.rs`).

mod common;

use common::java::JavaClient;
use common::{Serve, free_port};

#[test]
fn the_java_admin_client_describes_the_cluster() {
    let Some(java) = JavaClient::compile("DescribeCluster") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let mut broker = Serve::start_with(dir.path(), port, "warn", &["--node-id", "7"]);
    let out = java.run(&[&broker.addr]);
    let lines: Vec<&str> = out.lines().collect();
    assert!(
        lines[0].starts_with("cluster ") && lines[0].len() > "cluster ".len(),
        "{out}"
    );
    assert_eq!(
        &lines[1..],
        [format!("node 7 127.0.0.1:{port}").as_str(), "controller 7"],
        "{out}"
    );
    assert_eq!(broker.stop(), Some(0), "clean exit on SIGTERM");
}
