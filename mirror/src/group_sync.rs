//! Consumer-group offset sync (KIP-1279 §11) with the double clamp: for each mirrored group that
//! is not active on the destination, commit `max(destLogStart, min(sourceCommitted, destHW))`
//! with the destination's leader epoch at that offset. A consumer that fails over therefore
//! never gets OFFSET_OUT_OF_RANGE (the offset is inside the destination log) and never skips a
//! record (it is never past what the destination holds). An offset committed as the source has
//! it keeps the source commit's metadata string, as the KIP-1279 prototype's sync and
//! MirrorMaker 2's checkpoints do (an application's note, e.g. Kafka Streams' partition time);
//! a clamped one is the mirror's own and carries none.
//!
//! A sync never moves a group's offset here backwards while that offset is inside the
//! destination log and on its epoch history (MirrorMaker 2 skips such a partition too; the
//! prototype rewinds): consumers that ran here ahead of the source's do not re-read.

use crate::source::{SourceCluster, SourceError};
use mirrorlog_engine::manager::LogManager;
use mirrorlog_index::{LeaderEpoch, Offset, TopicPartition};

/// The offset committed on the destination for a source commit.
pub fn clamp_offset(
    source_committed: Offset,
    dest_log_start: Offset,
    dest_high_watermark: Offset,
) -> Offset {
    source_committed
        .min(dest_high_watermark)
        .max(dest_log_start)
}

/// Where synced offsets go: the destination's group coordinator.
pub trait GroupOffsetsSink: Send + Sync {
    /// Whether the group has members on the destination (then it is skipped: its own consumers
    /// commit).
    fn is_group_active(&self, group: &str) -> bool;
    /// Whether a (consumer) group of this name exists on the destination, with or without
    /// members: a source share group of the same name collides with it.
    fn has_consumer_group(&self, group: &str) -> bool;
    /// The group's committed offset of `tp` here: (offset, leader epoch, metadata). A sync
    /// does not commit again what is already committed. The default answers `None` (unknown:
    /// every sync commits).
    fn committed(&self, group: &str, tp: &TopicPartition) -> Option<(Offset, LeaderEpoch, String)> {
        let _ = (group, tp);
        None
    }
    /// Commits one offset with its leader epoch and metadata string.
    ///
    /// # Errors
    /// The commit failed.
    fn commit(
        &self,
        group: &str,
        tp: &TopicPartition,
        offset: Offset,
        leader_epoch: LeaderEpoch,
        metadata: &str,
    ) -> Result<(), String>;
}

/// What one sync did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GroupSyncReport {
    /// Offsets committed.
    pub committed: usize,
    /// Offsets lowered by the clamp (the source was ahead of the destination's high watermark).
    pub clamped: usize,
    /// Offsets not committed because the destination holds them already (offset, epoch and
    /// metadata).
    pub unchanged: usize,
    /// Offsets not committed because the group's offset here is ahead of the source's, inside
    /// the destination log and on its history: a sync never rewinds a group's consumers.
    pub kept_ahead: usize,
    /// Groups skipped because they are active on the destination.
    pub skipped_active: Vec<String>,
    /// Source share groups whose name a destination consumer group holds (KAFKA-20799's
    /// collision), each with its `GROUP_ID_IN_USE` message; never synced.
    pub collisions: Vec<String>,
    /// Source share groups skipped because this destination has no share groups (KIP-932 is
    /// not implemented here), without a collision.
    pub skipped_share: Vec<String>,
    /// Groups whose committed offsets the source refused to give (a Kafka error, e.g.
    /// COORDINATOR_NOT_AVAILABLE while its `__consumer_offsets` partition is offline there),
    /// each with the error; the other groups are synced.
    pub failed: Vec<String>,
}

/// Splits source groups into the consumer groups to sync and, for share groups, the report's
/// `collisions` (a destination consumer group holds the name: `GROUP_ID_IN_USE`) and
/// `skipped_share`. Share-group offsets are never read with OffsetFetch (a share group has none).
pub fn split_group_types(
    listed: Vec<crate::source::GroupListing>,
    sink: &dyn GroupOffsetsSink,
    report: &mut GroupSyncReport,
) -> Vec<String> {
    let mut consumer = vec![];
    for g in listed {
        let share = g.group_type.as_deref() == Some("share") || g.protocol_type == "share";
        if !share {
            consumer.push(g.group_id);
        } else if sink.has_consumer_group(&g.group_id) {
            report.collisions.push(format!(
                "GROUP_ID_IN_USE: group {} is a share group on the source and a consumer group \
                 on the destination; its offsets are not synced (rename one of them, or exclude \
                 it with mirror.groups.exclude)",
                g.group_id
            ));
        } else {
            report.skipped_share.push(g.group_id);
        }
    }
    consumer
}

/// Syncs `groups`' committed offsets for topics the destination holds.
///
/// # Errors
/// The source is unreachable (a group's refused OffsetFetch is reported in
/// [`GroupSyncReport::failed`] instead).
pub fn sync_group_offsets(
    source: &dyn SourceCluster,
    dest: &LogManager,
    sink: &dyn GroupOffsetsSink,
    groups: &[String],
) -> Result<GroupSyncReport, SourceError> {
    sync_group_offsets_where(source, dest, sink, groups, &|_| true)
}

/// [`sync_group_offsets`] for the partitions `keep` accepts only (the mirror keeps its own
/// partitions that are not STOPPED: a failed-over partition belongs to local consumers).
///
/// # Errors
/// As [`sync_group_offsets`].
pub fn sync_group_offsets_where(
    source: &dyn SourceCluster,
    dest: &LogManager,
    sink: &dyn GroupOffsetsSink,
    groups: &[String],
    keep: &dyn Fn(&TopicPartition) -> bool,
) -> Result<GroupSyncReport, SourceError> {
    let mut report = GroupSyncReport::default();
    'groups: for g in groups {
        if sink.is_group_active(g) {
            tracing::info!(group = %g, "offset sync skips a group active on the destination");
            report.skipped_active.push(g.clone());
            continue;
        }
        // One group the source cannot answer for must not hold every other group's offsets
        // (MirrorMaker 2's checkpoints go on per group too); an unreachable source stops the
        // sync, as every group would fail the same way.
        let committed = match source.committed_offsets(g) {
            Ok(c) => c,
            Err(e @ SourceError::Kafka { .. }) => {
                tracing::warn!(group = %g, "offset sync skips a group whose committed offsets the source refused: {e}");
                report.failed.push(format!("{g}: {e}"));
                continue;
            }
            Err(e) => return Err(e),
        };
        for c in committed {
            let tp = TopicPartition {
                topic: c.topic.clone(),
                partition: c.partition,
            };
            if !keep(&tp) {
                continue;
            }
            let Some(h) = dest.get(&tp) else { continue };
            let here = sink.committed(g, &tp);
            let (offset, epoch, ahead_here) = {
                let log = h.read();
                let o = clamp_offset(c.offset, log.log_start_offset(), log.high_watermark());
                let ahead_here = here
                    .as_ref()
                    .filter(|(d, e, _)| {
                        *d > o && *d <= log.high_watermark() && {
                            // A commit whose epoch ends below it in this log was made on a
                            // history since truncated (a failback's LOG_ALIGNMENT): not kept.
                            *e == LeaderEpoch::NONE || {
                                let (_, end) =
                                    log.epoch_cache().end_offset_for(*e, log.log_end_offset());
                                end != Offset::UNKNOWN && end >= *d
                            }
                        }
                    })
                    .map(|(d, _, _)| *d);
                (
                    o,
                    log.epoch_at(o)
                        .or(log.epoch_cache().latest_epoch())
                        .unwrap_or(LeaderEpoch::NONE),
                    ahead_here,
                )
            };
            // Never a rewind (MirrorMaker 2's checkpoints skip a partition whose target offset
            // is not below the translated one): the group's consumers here read further than
            // the source's did, e.g. a failed-over group that came back idle. Kept only inside
            // the destination log, so the double clamp holds for what stays committed.
            if let Some(d) = ahead_here {
                tracing::debug!(group = %g, partition = %tp, destination = d.get(), source = offset.get(), "offset sync keeps a destination offset ahead of the source's");
                report.kept_ahead += 1;
                continue;
            }
            let clamped = offset != c.offset;
            if clamped {
                report.clamped += 1;
            }
            let metadata = match &c.metadata {
                Some(m) if !clamped => m.as_str(),
                _ => "",
            };
            // Committed again, an unchanged offset would add a record to `__consumer_offsets`
            // per group and partition on every refresh.
            if here.is_some_and(|(o, e, m)| o == offset && e == epoch && m == metadata) {
                report.unchanged += 1;
                continue;
            }
            // A refused commit (the group got members since the check: UNKNOWN_MEMBER_ID)
            // skips this group, not the sync (spec §11: the syncer skips per group).
            if let Err(m) = sink.commit(g, &tp, offset, epoch, metadata) {
                tracing::info!(group = %g, partition = %tp, "offset sync skips a group whose commit the destination refused: {m}");
                report.skipped_active.push(g.clone());
                continue 'groups;
            }
            report.committed += 1;
        }
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Dest(Vec<&'static str>);

    impl GroupOffsetsSink for Dest {
        fn is_group_active(&self, _: &str) -> bool {
            false
        }
        fn has_consumer_group(&self, g: &str) -> bool {
            self.0.contains(&g)
        }
        fn commit(
            &self,
            _: &str,
            _: &TopicPartition,
            _: Offset,
            _: LeaderEpoch,
            _: &str,
        ) -> Result<(), String> {
            unreachable!("splitting commits nothing")
        }
    }

    fn listing(id: &str, group_type: &str) -> crate::source::GroupListing {
        crate::source::GroupListing {
            group_id: id.into(),
            protocol_type: if group_type == "share" {
                "share"
            } else {
                "consumer"
            }
            .into(),
            state: Some("Empty".into()),
            group_type: Some(group_type.into()),
        }
    }

    #[test]
    fn a_share_group_named_like_a_destination_consumer_group_is_a_precise_collision() {
        let mut report = GroupSyncReport::default();
        let sync = split_group_types(
            vec![
                listing("billing", "classic"),
                listing("audit", "share"),
                listing("fresh-share", "share"),
                listing("orders", "consumer"),
            ],
            &Dest(vec!["audit", "billing"]),
            &mut report,
        );
        assert_eq!(sync, vec!["billing".to_string(), "orders".to_string()]);
        assert_eq!(report.collisions.len(), 1);
        assert!(
            report.collisions[0].starts_with("GROUP_ID_IN_USE: group audit is a share group"),
            "{}",
            report.collisions[0]
        );
        assert_eq!(report.skipped_share, vec!["fresh-share".to_string()]);
    }

    #[test]
    fn the_double_clamp_keeps_offsets_inside_the_destination_log() {
        let c = |s, ls, hw| clamp_offset(Offset(s), Offset(ls), Offset(hw)).get();
        assert_eq!(c(50, 0, 100), 50);
        assert_eq!(
            c(150, 0, 100),
            100,
            "ahead of the destination: never skip a record"
        );
        assert_eq!(
            c(5, 10, 100),
            10,
            "below the destination's log start: never out of range"
        );
        assert_eq!(c(-1, 0, 100), 0);
    }
}
