//! Kafka's own Java clients (kafka-clients 4.3.0) on a failed-over mirror topic: the source holds
//! a committed and an aborted transaction, plain records and a transaction left open; after the
//! mirror is stopped the destination's log ends with the stop's ABORT marker and its
//! MIRROR_PID_RESET control batch (a control type the Java client does not know). read_committed
//! and read_uncommitted consumers, a group consumer, and new idempotent and transactional
//! producers on the destination all work across it. Scenario code:
//! `tests/kafka-java/ProducerConsumerScenarios.java` (`mirror_source`, `mirror_destination`).

mod common;

use common::java::JavaClient;
use common::mirrors::{create_mirror, ok, wait_mirrored};
use common::{Serve, free_port};

#[test]
fn java_clients_read_and_write_a_failed_over_mirror_topic() {
    let Some(java) = JavaClient::compile("ProducerConsumerScenarios") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut src = Serve::start(&dir.path().join("src"), free_port());
    let mut dst = Serve::start(&dir.path().join("dst"), free_port());
    let out = java.run(&["mirror_source", &src.addr, "orders"]);
    assert!(out.contains("ok mirror_source"), "{out}");
    let d = dst.addr.as_str();
    create_mirror(
        d,
        "east",
        &src.addr,
        &["mirror.metadata.refresh.interval.ms=200"],
    );
    ok(d, &["--start", "--mirror", "east", "--topics", "orders"]);
    // 5 committed + marker, 3 aborted + marker, 4 plain, 2 open.
    wait_mirrored(d, "east", "orders", 0, 16);
    ok(d, &["--stop", "--mirror", "east", "--topics", "orders"]);

    let out = java.run(&["mirror_destination", d, "orders"]);
    let line = |prefix: &str| -> String {
        out.lines()
            .find_map(|l| l.strip_prefix(prefix))
            .unwrap_or_else(|| panic!("no {prefix:?} in:\n{out}"))
            .to_string()
    };
    let committed = "committed-0,committed-1,committed-2,committed-3,committed-4,\
                     plain-0,plain-1,plain-2,plain-3";
    assert_eq!(line("read_committed "), committed);
    assert_eq!(
        line("read_uncommitted "),
        "committed-0,committed-1,committed-2,committed-3,committed-4,aborted-0,aborted-1,\
         aborted-2,plain-0,plain-1,plain-2,plain-3,open-0,open-1"
    );
    let after = format!("{committed},dest-idem,dest-tx");
    assert_eq!(line("after read_committed "), after);
    assert_eq!(line("group "), after);
    assert!(out.contains("client log: 0 warnings, 0 errors"), "{out}");
    assert_eq!(dst.stop(), Some(0), "clean exit on SIGTERM");
    assert_eq!(src.stop(), Some(0), "clean exit on SIGTERM");
}
