//! `mirrorlog dump` of a `.log` whose batch header has a negative `lastOffsetDelta` (a corrupt
//! header: the field is framed without validation, and the CRC mismatch is only flagged) and a
//! producer's base sequence: the text line's `lastSequence` is computed with
//! `Sequence::increment(lastOffsetDelta)`, whose `i32::MAX - n` overflows for a negative `n`.
//! Dump must report the corrupt batch and exit 1, never panic.

use std::fs;
use std::path::Path;
use std::process::Command;

const FOO_0_LOG: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../shared/kafka-fixtures/kraft-combined-logs/foo-0/00000000000000000000.log"
);

#[test]
fn a_negative_last_offset_delta_is_reported_not_a_panic() {
    let tmp = tempfile::tempdir().unwrap();
    let log = tmp.path().join("00000000000000000000.log");
    let mut bytes = fs::read(FOO_0_LOG).unwrap();
    // Kafka's producer 0 wrote it: baseSequence (bytes 53..57) is 0, not -1.
    assert_eq!(&bytes[53..57], &[0, 0, 0, 0]);
    // lastOffsetDelta (bytes 23..27) := -1.
    bytes[23..27].copy_from_slice(&(-1i32).to_be_bytes());
    fs::write(&log, bytes).unwrap();
    for args in [&[][..], &["--records"][..]] {
        let out = Command::new(env!("CARGO_BIN_EXE_mirrorlog"))
            .arg("dump")
            .args(args)
            .arg(Path::new(&log))
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !stderr.contains("panicked"),
            "dump {args:?} panicked: {stderr}"
        );
        assert_eq!(out.status.code(), Some(1), "dump {args:?}: {stderr}");
        assert!(stderr.contains("corrupt batch at position 0"), "{stderr}");
    }
}
