//! Found in session 15 (README "Found and left"): the group offset sync committed the source's
//! offset over a destination offset ahead of it, rewinding an idle group's consumers here so
//! they read again what they had read (MirrorMaker 2's `syncGroupOffset` skips a partition whose
//! target offset is not below the translated one). The sync now keeps such an offset, but only
//! while it is inside the destination log (KIP-1279 §11's double clamp) and on its history: a
//! commit past the high watermark, or in an epoch a failback's truncation ended below it, is
//! still replaced.

use crate::common;

use common::{FiveOnOrders, orders, produce_to};
use mirrorlog_engine::config::LogConfig;
use mirrorlog_index::{LeaderEpoch, Offset, TopicId, TopicPartition};
use mirrorlog_mirror::group_sync::{GroupOffsetsSink, sync_group_offsets};

/// A destination coordinator where each group has committed one offset of orders-0, given by
/// the group's name: `ahead` 8 in epoch 0 (the log's), `no-epoch` 8 without an epoch, `past-hw`
/// 20 (beyond the log), `truncated` 8 in epoch 7, which this log never had.
#[derive(Default)]
struct Sink {
    committed: parking_lot::Mutex<Vec<(String, i64)>>,
}

impl GroupOffsetsSink for Sink {
    fn is_group_active(&self, _: &str) -> bool {
        false
    }
    fn has_consumer_group(&self, _: &str) -> bool {
        true
    }
    fn committed(&self, group: &str, _: &TopicPartition) -> Option<(Offset, LeaderEpoch, String)> {
        let (o, e) = match group {
            "ahead" => (8, 0),
            "no-epoch" => (8, -1),
            "past-hw" => (20, 0),
            "truncated" => (8, 7),
            _ => return None,
        };
        Some((Offset(o), LeaderEpoch(e), String::new()))
    }
    fn commit(
        &self,
        group: &str,
        _: &TopicPartition,
        offset: Offset,
        _: LeaderEpoch,
        _: &str,
    ) -> Result<(), String> {
        self.committed
            .lock()
            .push((group.to_string(), offset.get()));
        Ok(())
    }
}

#[test]
fn a_destination_offset_ahead_of_the_source_is_kept_inside_the_log_only() {
    let dir = tempfile::tempdir().unwrap();
    let dst = common::manager(dir.path());
    dst.create(&orders(0), TopicId([1; 16]), LogConfig::default())
        .unwrap();
    produce_to(&dst, &orders(0), b"v", 10);
    assert_eq!(
        dst.get(&orders(0)).unwrap().read().high_watermark(),
        Offset(10)
    );
    let sink = Sink::default();
    let groups: Vec<String> = ["ahead", "no-epoch", "past-hw", "truncated"]
        .map(String::from)
        .to_vec();
    let r = sync_group_offsets(&FiveOnOrders, &dst, &sink, &groups).unwrap();
    assert_eq!(
        *sink.committed.lock(),
        vec![("past-hw".to_string(), 5), ("truncated".to_string(), 5)],
        "offsets 8 of `ahead` and `no-epoch` must stay; 20 (past the high watermark) and 8 of an \
         epoch this log does not hold must take the source's 5"
    );
    assert_eq!((r.kept_ahead, r.committed), (2, 2));
}
