//! Kafka's `CheckpointFile` reader returns no entries, without error, for a checkpoint holding
//! only its version line (`line = reader.readLine(); if (line == null) return emptyList()`).
//! `mirrorlog dump` of such a `leader-epoch-checkpoint` reports it corrupt and exits 1.

use std::fs;
use std::process::Command;

#[test]
fn a_leader_epoch_checkpoint_with_only_a_version_line_is_empty_not_corrupt() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("leader-epoch-checkpoint");
    fs::write(&path, "0\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_mirrorlog"))
        .args(["dump", "--json"])
        .arg(&path)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    let first: serde_json::Value = serde_json::from_str(stdout.lines().next().unwrap()).unwrap();
    assert_eq!(first["type"], "leader_epoch_checkpoint");
    assert_eq!(first["entry_count"], 0);
}
