//! Scenario: the README's first command, `mirrorlog demo`, runs end to end: two brokers, a mirror
//! over the Kafka protocol, failover mid-stream, and its own byte-for-byte verification.

use std::process::Command;

#[test]
fn the_demo_mirrors_fails_over_and_verifies_itself() {
    let out = Command::new(env!("CARGO_BIN_EXE_mirrorlog"))
        .arg("demo")
        .output()
        .expect("run the demo");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "demo failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for line in [
        "[7/7] report",
        "every batch of 3 partitions identical at identical offsets",
        "READ_COMMITTED: the aborted and the open-at-failover transactions are skipped",
        "the destination takes writes now",
        "records lost or changed    0",
    ] {
        assert!(stdout.contains(line), "missing {line:?} in:\n{stdout}");
    }
}
