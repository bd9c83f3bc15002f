//! The broker SIGKILLed in the middle of a Java idempotent producer's run (acks=all,
//! `max.in.flight.requests.per.connection` 5), then restarted on the same dir and port: the
//! producer retries through the restart, and every record it was told was written is in the
//! log at the offset it was given, byte for byte, with no record twice. The Java side of
//! tests/broker_confluent_kafka.rs's kill test. Then the same with a transactional producer
//! committing transaction after transaction: every transaction whose commit returned is
//! visible to read_committed exactly once, every one whose abort returned is not, and none is
//! half visible. Scenario code in `tests/kafka-java/ProducerConsumerScenarios.java`.

mod common;

use common::java::JavaClient;
use common::{Serve, free_port};
use std::path::Path;
use std::time::{Duration, Instant};

const RECORDS: &str = "200000";

#[test]
fn no_acknowledged_record_is_lost_or_duplicated_when_the_broker_is_killed_mid_produce() {
    let Some(java) = JavaClient::compile("ProducerConsumerScenarios") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let mut broker = Serve::start(dir.path(), port);
    let acks = dir.path().join("acked.txt");
    let producer = {
        let (bs, acks) = (broker.addr.clone(), acks.to_str().unwrap().to_string());
        std::thread::spawn(move || java.run(&["produce_acked", &bs, "crashy", RECORDS, &acks]))
    };
    // Killed once the producer has written, not after a guessed pause (JVM start and topic
    // creation take seconds on a loaded machine, and a kill before the first record tests no
    // crash at all).
    let started = Instant::now();
    while !has_records(&dir.path().join("crashy-0")) && !has_records(&dir.path().join("crashy-1")) {
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "hang guard: the producer wrote nothing"
        );
        assert!(
            !producer.is_finished(),
            "the producer exited before writing"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    broker.kill();
    assert!(
        !producer.is_finished(),
        "the producer finished before the kill: nothing was tested"
    );
    let mut broker = Serve::start(dir.path(), port);
    let out = producer.join().expect("producer run failed");
    assert!(
        out.contains(&format!("ok produce_acked {RECORDS}")),
        "{out}"
    );
    let java = JavaClient::compile("ProducerConsumerScenarios").unwrap();
    let out = java.run(&[
        "consume_check",
        &broker.addr,
        "crashy",
        acks.to_str().unwrap(),
    ]);
    assert!(
        out.contains(&format!(
            "ok consume_check acked {RECORDS} in log {RECORDS}"
        )),
        "{out}"
    );
    assert_eq!(broker.stop(), Some(0), "clean exit on SIGTERM");
}

#[test]
fn no_committed_transaction_is_lost_or_torn_when_the_broker_is_killed_mid_run() {
    let Some(java) = JavaClient::compile("ProducerConsumerScenarios") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let mut broker = Serve::start(dir.path(), port);
    let log = dir.path().join("transactions.txt");
    let producer = {
        let (bs, log) = (broker.addr.clone(), log.to_str().unwrap().to_string());
        std::thread::spawn(move || java.run(&["txn_acked", &bs, "crashtx", "1000", &log]))
    };
    let started = Instant::now();
    while !has_records(&dir.path().join("crashtx-0")) && !has_records(&dir.path().join("crashtx-1"))
    {
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "hang guard: the producer wrote nothing"
        );
        assert!(
            !producer.is_finished(),
            "the producer exited before writing"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    broker.kill();
    assert!(
        !producer.is_finished(),
        "the producer finished before the kill: nothing was tested"
    );
    let mut broker = Serve::start(dir.path(), port);
    let out = producer.join().expect("producer run failed");
    assert!(out.contains("ok txn_acked 1000"), "{out}");
    let java = JavaClient::compile("ProducerConsumerScenarios").unwrap();
    let out = java.run(&["txn_check", &broker.addr, "crashtx", log.to_str().unwrap()]);
    assert!(out.contains("ok txn_check committed 1000"), "{out}");
    assert_eq!(broker.stop(), Some(0), "clean exit on SIGTERM");
}

/// Whether a partition directory holds a segment with a batch in it (a batch header is never
/// all zeros; a preallocated `.log` file can be, before its first append).
fn has_records(partition_dir: &Path) -> bool {
    std::fs::read_dir(partition_dir).is_ok_and(|entries| {
        entries.filter_map(Result::ok).any(|e| {
            e.path().extension().is_some_and(|x| x == "log")
                && std::fs::read(e.path()).is_ok_and(|b| b.iter().take(61).any(|&byte| byte != 0))
        })
    })
}
