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
        // Step 3 names every codec it writes, and the lag counts offsets (markers among them).
        "[3/7] producing plain, lz4, zstd, snappy and gzip data and two transactions to the \
         source; group \"billing\" commits",
        "in 5 codecs, 2 transactions",
    ] {
        assert!(stdout.contains(line), "missing {line:?} in:\n{stdout}");
    }
    let max_lag = stdout
        .lines()
        .find(|l| l.contains("max lag observed"))
        .unwrap_or_else(|| panic!("no max lag line in:\n{stdout}"));
    assert!(
        max_lag.ends_with(" offsets (records and markers)"),
        "{max_lag:?}"
    );
    assert!(
        !stdout.contains(" records  lag "),
        "the progress lines count offsets:\n{stdout}"
    );
}
