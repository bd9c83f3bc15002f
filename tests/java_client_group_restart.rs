//! Consumer groups of Java KafkaConsumers (kafka-clients 4.3.0, classic protocol) against
//! `mirrorlog serve`: two members rebalance when one leaves (`close()`), commit with
//! `commitSync` (leader epoch and metadata kept), and after a broker restart on the same data
//! dir and port a new member resumes from the commits; the cooperative-sticky assignor through
//! joins and a leave; static members (`group.instance.id`): one rejoining with its partition,
//! one fenced by a newer instance with its id, one leaving explicitly (`CloseOptions`).
//! Scenario code: `tests/kafka-java/ProducerConsumerScenarios.java`.

mod common;

use common::java::JavaClient;
use common::{Serve, free_port};

#[test]
fn a_java_consumer_group_rebalances_commits_and_resumes_after_a_restart() {
    let Some(java) = JavaClient::compile("ProducerConsumerScenarios") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let mut broker = Serve::start(dir.path(), port);
    let out = java.run(&["group_phase1", &broker.addr, "grouped", "g1"]);
    assert!(out.contains("ok group_phase1 120"), "{out}");
    assert!(out.contains("client log: 0 warnings, 0 errors"), "{out}");
    let committed: Vec<String> = out
        .lines()
        .find_map(|l| l.strip_prefix("committed "))
        .unwrap()
        .split(' ')
        .map(str::to_string)
        .collect();
    assert_eq!(committed, ["40", "40", "40"]);
    assert_eq!(broker.stop(), Some(0), "clean exit on SIGTERM");

    let mut broker = Serve::start(dir.path(), port);
    let mut args = vec!["group_phase2", &broker.addr, "grouped", "g1"];
    args.extend(committed.iter().map(String::as_str));
    let out = java.run(&args);
    assert!(out.contains("ok group_phase2 30"), "{out}");
    assert!(out.contains("client log: 0 warnings, 0 errors"), "{out}");
    assert_eq!(broker.stop(), Some(0), "clean exit on SIGTERM");
}

#[test]
fn cooperative_rebalances_and_a_static_member_rejoining() {
    let Some(java) = JavaClient::compile("ProducerConsumerScenarios") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut broker = Serve::start(dir.path(), free_port());
    let out = java.run(&["cooperative+static", &broker.addr]);
    assert!(out.lines().any(|l| l == "ok cooperative 120"), "{out}");
    assert!(out.lines().any(|l| l == "ok static"), "{out}");
    // The one error is the fenced static member's own ("Caught fenced group.instance.id").
    assert!(out.contains("client log: 0 warnings, 1 errors"), "{out}");
    assert_eq!(broker.stop(), Some(0), "clean exit on SIGTERM");
}
