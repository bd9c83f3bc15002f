//! Found in review of the operator side (KIP-1279 §11): the syncer must skip a group whose
//! commit the destination coordinator rejects (UNKNOWN_MEMBER_ID: it got members between the
//! active-group check and the commit) and go on with the other groups. `sync_group_offsets_where`
//! returns on the first failed commit instead, so one busy group leaves every later group
//! unsynced — on every refresh, for as long as it stays busy — and the sync's report is lost.

#[macro_use]
mod common;

use common::manager;
use mirrorlog_engine::config::LogConfig;
use mirrorlog_engine::log::LeaderOrigin;
use mirrorlog_index::{LeaderEpoch, Offset, TimestampMs, TopicId, TopicPartition};
use mirrorlog_mirror::group_sync::{GroupOffsetsSink, sync_group_offsets};
use mirrorlog_mirror::source::*;
use mirrorlog_segment::BatchBuilder;
use parking_lot::Mutex;

/// A source whose groups `busy` and `billing` both committed offset 5 of orders-0.
#[derive(Debug)]
struct Groups;

impl SourceCluster for Groups {
    no_data_path!();
    fn list_groups(&self) -> Result<Vec<GroupListing>, SourceError> {
        Err(common::not_on_the_data_path())
    }
    fn committed_offsets(&self, _: &str) -> Result<Vec<CommittedOffset>, SourceError> {
        Ok(vec![CommittedOffset {
            topic: "orders".into(),
            partition: 0,
            offset: Offset(5),
            leader_epoch: LeaderEpoch(0),
            metadata: None,
        }])
    }
}

/// The destination coordinator: `busy` got a member after the active check, so its
/// generation −1 commit is refused, as Kafka's coordinator does.
struct Sink(Mutex<Vec<String>>);

impl GroupOffsetsSink for Sink {
    fn is_group_active(&self, _: &str) -> bool {
        false
    }
    fn has_consumer_group(&self, _: &str) -> bool {
        false
    }
    fn commit(
        &self,
        group: &str,
        _: &TopicPartition,
        _: Offset,
        _: LeaderEpoch,
        _: &str,
    ) -> Result<(), String> {
        if group == "busy" {
            return Err("UNKNOWN_MEMBER_ID".into());
        }
        self.0.lock().push(group.to_string());
        Ok(())
    }
}

#[test]
fn a_group_whose_commit_is_refused_does_not_stop_the_other_groups_sync() {
    let dir = tempfile::tempdir().unwrap();
    let dst = manager(dir.path());
    let tp = TopicPartition {
        topic: "orders".into(),
        partition: 0,
    };
    let h = dst
        .create(&tp, TopicId([1; 16]), LogConfig::default())
        .unwrap();
    {
        let mut log = h.write();
        let mut b = BatchBuilder::new();
        for i in 0..10 {
            b.append(TimestampMs(i), None, Some(b"v"), &[]);
        }
        log.append_as_leader(b.build().into_bytes(), LeaderEpoch(0), LeaderOrigin::Client)
            .unwrap();
        let leo = log.log_end_offset();
        log.update_high_watermark(leo);
    }
    let sink = Sink(Mutex::new(vec![]));
    let r = sync_group_offsets(
        &Groups,
        &dst,
        &sink,
        &["busy".to_string(), "billing".to_string()],
    );
    assert_eq!(
        *sink.0.lock(),
        vec!["billing".to_string()],
        "billing's offsets must be synced although busy's commit was refused"
    );
    let r = r.expect("a refused commit of one group is skipped, not a failed sync");
    assert_eq!(r.committed, 1);
}
