//! Consumer-group offset sync (KIP-1279 §11) with the double clamp: for each mirrored group that
//! is not active on the destination, commit `max(destLogStart, min(sourceCommitted, destHW))`
//! with the destination's leader epoch at that offset. A consumer that fails over therefore
//! never gets OFFSET_OUT_OF_RANGE (the offset is inside the destination log) and never skips a
//! record (it is never past what the destination holds).

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
    /// Commits one offset with its leader epoch.
    ///
    /// # Errors
    /// The commit failed.
    fn commit(
        &self,
        group: &str,
        tp: &TopicPartition,
        offset: Offset,
        leader_epoch: LeaderEpoch,
    ) -> Result<(), String>;
}

/// What one sync did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GroupSyncReport {
    /// Offsets committed.
    pub committed: usize,
    /// Offsets lowered by the clamp (the source was ahead of the destination's high watermark).
    pub clamped: usize,
    /// Groups skipped because they are active on the destination.
    pub skipped_active: Vec<String>,
}

/// Syncs `groups`' committed offsets for topics the destination holds.
///
/// # Errors
/// The source is unreachable, or a commit failed.
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
    for g in groups {
        if sink.is_group_active(g) {
            tracing::info!(group = %g, "offset sync skips a group active on the destination");
            report.skipped_active.push(g.clone());
            continue;
        }
        for c in source.committed_offsets(g)? {
            let tp = TopicPartition {
                topic: c.topic.clone(),
                partition: c.partition,
            };
            if !keep(&tp) {
                continue;
            }
            let Some(h) = dest.get(&tp) else { continue };
            let (offset, epoch) = {
                let log = h.read();
                let o = clamp_offset(c.offset, log.log_start_offset(), log.high_watermark());
                (
                    o,
                    log.epoch_at(o)
                        .or(log.epoch_cache().latest_epoch())
                        .unwrap_or(LeaderEpoch::NONE),
                )
            };
            if offset != c.offset {
                report.clamped += 1;
            }
            sink.commit(g, &tp, offset, epoch)
                .map_err(|m| SourceError::Protocol(format!("destination commit: {m}")))?;
            report.committed += 1;
        }
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

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
