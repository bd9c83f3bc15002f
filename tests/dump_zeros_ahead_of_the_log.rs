//! `mirrorlog dump` of a live segment: a broker writes zeros ahead of its active `.log`
//! (`log.preallocate`, on by default) and the direct-I/O mode preallocates it, so a segment read
//! while the broker runs, or after a crash, ends in zeros. They are where the log ends, not a
//! corrupt batch; bytes other than zeros after the last batch still are.

use std::path::Path;
use std::process::{Command, Output};

fn dump(log: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mirrorlog"))
        .args(["dump", "--records"])
        .arg(log)
        .output()
        .unwrap()
}

#[test]
fn zeros_after_the_last_batch_end_the_log_cleanly() {
    let golden = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/kafka-java/00000000000000000000.log");
    let bytes = std::fs::read(&golden).unwrap();
    let clean = dump(&golden);
    assert!(clean.status.success());

    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("00000000000000000000.log");
    let mut with_zeros = bytes.clone();
    with_zeros.resize(bytes.len() + (1 << 20), 0);
    std::fs::write(&log, &with_zeros).unwrap();
    let out = dump(&log);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The same batches and records (after the "Dumping PATH" line).
    let body = |o: &Output| {
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .skip(1)
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert!(body(&out) == body(&clean), "the same batches and records");
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // Fewer zeros than a batch header are a clean end too.
    std::fs::write(&log, [&bytes[..], &[0u8; 7][..]].concat()).unwrap();
    assert!(dump(&log).status.success());

    // One non-zero byte far into the zeros: the tail is not preallocated space, and the scan's
    // stop is reported as before.
    with_zeros[bytes.len() + 70_000] = 1;
    std::fs::write(&log, &with_zeros).unwrap();
    let out = dump(&log);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("corrupt batch at position {}", bytes.len())),
        "{stderr}"
    );
}
