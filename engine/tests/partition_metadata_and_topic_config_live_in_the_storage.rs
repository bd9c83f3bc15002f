//! `partition.metadata` and `topic.config` are written and read through the manager's
//! `Storage`, `.tmp` written and synced, renamed over the file, the partition directory synced,
//! so that the simulated storage's crashes decide which version survives.
//!
//! They were plain files written with `std::fs` beside the simulated `.log` files: a simulated
//! crash never lost or reverted one. Now: a crash after `create` or `update_config` returned keeps
//! the new files; a crash before a new `topic.config`'s rename is durable keeps the old one.

use crate::common;

use common::*;
use mirrorlog_engine::manager::{LogManager, TOPIC_CONFIG_FILE};
use mirrorlog_index::{PartitionMetadata, TopicId};
use mirrorlog_segment::io::{SimStorage, TornTail};
use std::path::{Path, PathBuf};

fn partition_dir(dir: &Path) -> PathBuf {
    dir.join(orders(0).to_string())
}

fn topic_config_text(sim: &SimStorage, dir: &Path) -> String {
    String::from_utf8(
        sim.file_bytes(&partition_dir(dir).join(TOPIC_CONFIG_FILE))
            .expect("topic.config in the storage"),
    )
    .unwrap()
}

/// A manager in `dir` with `orders-0` created with `retention.ms` 11111.
fn manager_with_partition(sim: &SimStorage, dir: &Path) -> LogManager {
    let mgr = sim_manager(sim, dir);
    let mut cfg = small_config();
    cfg.retention_ms = 11_111;
    mgr.create(&orders(0), TopicId([7; 16]), cfg).unwrap();
    mgr
}

#[test]
fn files_written_by_create_are_kept_by_a_crash() {
    let d = tempfile::tempdir().unwrap();
    let sim = SimStorage::new();
    let mgr = manager_with_partition(&sim, d.path());
    let meta = PartitionMetadata::path_in(&partition_dir(d.path()));
    assert!(!meta.exists(), "partition.metadata is a real file");
    assert!(
        !partition_dir(d.path()).join(TOPIC_CONFIG_FILE).exists(),
        "topic.config is a real file"
    );
    let crashed = sim.crash(TornTail::None);
    drop(mgr);
    assert_eq!(
        crashed.file_bytes(&meta),
        Some(
            PartitionMetadata {
                topic_id: TopicId([7; 16])
            }
            .encode()
            .into_bytes()
        )
    );
    assert!(topic_config_text(&crashed, d.path()).contains("retention.ms=11111\n"));
    let mgr = sim_manager(&crashed, d.path());
    let h = mgr
        .get(&orders(0))
        .expect("the partition survives the crash");
    assert_eq!(h.topic_id(), TopicId([7; 16]));
    assert_eq!(h.read().config().retention_ms, 11_111);
}

/// Cuts the power after `syncs_allowed` more syncs, changes the config (which fails) and
/// crashes: the old `topic.config` is intact.
fn failed_update_keeps_the_old_config(syncs_allowed: u64) {
    let d = tempfile::tempdir().unwrap();
    let sim = SimStorage::new();
    let mgr = manager_with_partition(&sim, d.path());
    let mut cfg = small_config();
    cfg.retention_ms = 22_222;
    sim.halt_after_syncs(sim.syncs_completed() + syncs_allowed);
    assert!(mgr.update_config(&orders(0), cfg).is_err());
    if syncs_allowed == 1 {
        assert!(
            topic_config_text(&sim, d.path()).contains("retention.ms=22222\n"),
            "the rename happened (live)"
        );
    }
    let crashed = sim.crash(TornTail::None);
    drop(mgr);
    assert!(
        topic_config_text(&crashed, d.path()).contains("retention.ms=11111\n"),
        "the crash did not keep the old topic.config intact"
    );
    let mgr = sim_manager(&crashed, d.path());
    assert_eq!(
        mgr.get(&orders(0)).unwrap().read().config().retention_ms,
        11_111
    );
}

#[test]
fn a_crash_between_the_tmp_write_and_the_rename_keeps_the_old_config() {
    failed_update_keeps_the_old_config(0);
}

#[test]
fn a_crash_before_the_rename_is_synced_keeps_the_old_config() {
    failed_update_keeps_the_old_config(1);
}
