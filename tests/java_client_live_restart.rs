//! Kafka's own Java clients living through a `mirrorlog serve` restart (SIGTERM, started again
//! on the same data dir and port) while they work: a transaction open across the restart
//! commits, an idempotent producer continues with no duplicate, and a group member keeps
//! consuming and committing, reading nothing twice. Scenario code:
//! `tests/kafka-java/ProducerConsumerScenarios.java` (`live_restart`).

mod common;

use common::java::JavaClient;
use common::{Serve, free_port};
use std::time::{Duration, Instant};

#[test]
fn java_clients_live_through_a_broker_restart() {
    let Some(java) = JavaClient::compile("ProducerConsumerScenarios") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let hand = tempfile::tempdir().unwrap();
    let port = free_port();
    let mut broker = Serve::start(dir.path(), port);
    let run = {
        let (bs, hand) = (
            broker.addr.clone(),
            hand.path().to_str().unwrap().to_string(),
        );
        std::thread::spawn(move || java.run(&["live_restart", &bs, &hand]))
    };
    // The program writes `ready` once its clients are mid-work, then waits for `go`.
    let started = Instant::now();
    while !hand.path().join("ready").exists() {
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "hang guard: the clients never got ready"
        );
        assert!(!run.is_finished(), "the program exited before the restart");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(broker.stop(), Some(0), "clean exit on SIGTERM");
    let mut broker = Serve::start(dir.path(), port);
    std::fs::write(hand.path().join("go"), "").unwrap();
    let out = run.join().expect("live_restart failed");
    assert!(out.lines().any(|l| l == "ok live_restart"), "{out}");
    assert!(
        out.lines()
            .any(|l| l.starts_with("client log: ") && l.ends_with(" 0 errors")),
        "{out}"
    );
    assert_eq!(broker.stop(), Some(0), "clean exit on SIGTERM");
}
