//! A crash at any point of `LogManager::create` leaves either no partition or the partition with
//! the config it was created with — never the partition with the broker defaults.
//!
//! `create` wrote `partition.metadata` (durably: its rename synced into the durable partition
//! directory) before `topic.config`. A crash between the two left a directory that the next start
//! loads as a partition (it has `partition.metadata`) with no `topic.config`, so with the broker
//! defaults: an internal topic's `retention.ms=-1` or a mirror topic's read-only mark silently
//! gone, and the retried create answered "already exists". `partition.metadata` is what marks a
//! finished create (a directory without it and without segments is removed at start), so it is
//! written last, after `topic.config`.

use crate::common;

use common::*;
use mirrorlog_index::TopicId;
use mirrorlog_segment::io::{SimStorage, TornTail};

#[test]
fn a_crash_at_every_sync_of_create_keeps_no_partition_or_its_config() {
    for k in 0.. {
        let d = tempfile::tempdir().unwrap();
        let sim = SimStorage::new();
        let mgr = sim_manager(&sim, d.path());
        let mut cfg = small_config();
        cfg.retention_ms = 11_111;
        // The power fails after `k` more syncs.
        sim.halt_after_syncs(sim.syncs_completed() + k);
        let created = mgr.create(&orders(0), TopicId([7; 16]), cfg).is_ok();
        let crashed = sim.crash(TornTail::None);
        drop(mgr);
        let mgr = sim_manager(&crashed, d.path());
        if let Some(h) = mgr.get(&orders(0)) {
            assert_eq!(
                h.read().config().retention_ms,
                11_111,
                "power cut after {k} syncs of create: the partition came back with the defaults"
            );
            assert_eq!(h.topic_id(), TopicId([7; 16]));
        } else {
            assert!(
                !created,
                "a created partition was lost (power cut after {k} syncs)"
            );
        }
        if created {
            break;
        }
    }
}
