//! The failover report (`mirrorlog mirrors --failover-report`): what a stop now would do to the
//! consumers of the mirrored topics. For each source group (filtered by the mirror's
//! `mirror.groups.include/exclude`) and each mirrored partition it has committed on the source:
//!
//! - `redelivered`: records the group has consumed on the source that its consumers would read
//!   again on the destination — from the offset synced to the destination up to what it
//!   consumed (bounded by what the destination holds): `min(source committed, destination log
//!   end) − destination committed`. `None` when nothing is committed on the destination yet
//!   (consumers would start per their `auto.offset.reset`).
//! - `not_on_destination`: records the group consumed on the source that the destination does
//!   not hold yet — what a failover now loses for it (the replication lag it has seen):
//!   `max(0, source committed − destination log end)`.
//!
//! Both clusters are read through [`SourceCluster`] (committed offsets, group listings).
//!
//! The report is what an operator runs when the source may be partly down, so one group whose
//! offsets cannot be read (its coordinator unavailable or loading, any error the source answers
//! for it, or a Kafka error the destination answers for it) does not hide the others: it is
//! listed in [`FailoverReport::unreadable`] with its error and the report goes on. Only a failure
//! of a cluster as a whole (the group listing, the destination unreachable) fails the report.

use crate::manager::compile_patterns;
use crate::source::{SourceCluster, SourceError};
use mirrorlog_index::{Offset, TopicPartition};
use std::collections::BTreeMap;

/// One group on one partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exposure {
    /// Group id.
    pub group: String,
    /// The partition.
    pub partition: TopicPartition,
    /// Committed on the source.
    pub source_committed: Offset,
    /// Committed on the destination, if anything is.
    pub destination_committed: Option<Offset>,
    /// The destination's log end.
    pub destination_log_end: Offset,
    /// Records read again after a failover now (see the module docs).
    pub redelivered: Option<i64>,
    /// Records consumed on the source that the destination lacks.
    pub not_on_destination: i64,
}

/// A group whose committed offsets could not be read: it is missing from the exposures.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnreadableGroup {
    /// Group id.
    pub group: String,
    /// Which cluster failed to give its offsets.
    pub cluster: Side,
    /// What that cluster answered.
    pub error: SourceError,
}

/// Which cluster of the mirror.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The mirror's source.
    Source,
    /// The destination (this cluster).
    Destination,
}

impl Side {
    /// `source` or `destination`.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Side::Source => "source",
            Side::Destination => "destination",
        }
    }
}

/// The report: every group and partition that could be read, and the groups that could not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailoverReport {
    /// One entry per group and mirrored partition it committed on the source.
    pub exposures: Vec<Exposure>,
    /// Groups left out because a cluster could not give their offsets; the report is
    /// incomplete when this is not empty.
    pub unreadable: Vec<UnreadableGroup>,
}

/// Computes the report for `partitions` (mirrored partitions → destination log end).
///
/// # Errors
/// The source's group listing fails, the destination is unreachable (anything but a Kafka error
/// answered for one group), or a group pattern is not a valid regex.
pub fn failover_exposure(
    source: &dyn SourceCluster,
    dest: &dyn SourceCluster,
    partitions: &BTreeMap<TopicPartition, Offset>,
    groups_include: &[String],
    groups_exclude: &[String],
) -> Result<FailoverReport, SourceError> {
    let include =
        compile_patterns("mirror.groups.include", groups_include).map_err(SourceError::Protocol)?;
    let exclude =
        compile_patterns("mirror.groups.exclude", groups_exclude).map_err(SourceError::Protocol)?;
    let mut out = vec![];
    let mut unreadable = vec![];
    for g in source.list_groups()? {
        let id = &g.group_id;
        if !include.iter().any(|r| r.is_match(id)) || exclude.iter().any(|r| r.is_match(id)) {
            continue;
        }
        // A share group has no committed offsets (Kafka answers OffsetFetch for one with
        // GROUP_ID_NOT_FOUND) and the sync never syncs it: nothing to report.
        if g.group_type.as_deref() == Some("share") || g.protocol_type == "share" {
            continue;
        }
        let on_dest: BTreeMap<TopicPartition, Offset> = match dest.committed_offsets(id) {
            Ok(c) => c,
            // The name is a share group on the destination (KAFKA-20799's collision): nothing
            // is committed there for consumers of this group.
            Err(SourceError::Kafka { code: 69, .. }) => vec![],
            // The destination answered for this group (coordinator loading or moving…): the
            // others may still be read.
            Err(error @ SourceError::Kafka { .. }) => {
                unreadable.push(UnreadableGroup {
                    group: id.clone(),
                    cluster: Side::Destination,
                    error,
                });
                continue;
            }
            Err(e) => return Err(e),
        }
        .into_iter()
        .filter(|c| c.offset.get() >= 0)
        .map(|c| {
            (
                TopicPartition {
                    topic: c.topic,
                    partition: c.partition,
                },
                c.offset,
            )
        })
        .collect();
        // The source may be partly down (this group's coordinator among the lost nodes): any
        // failure here is this group's.
        let on_source = match source.committed_offsets(id) {
            Ok(c) => c,
            Err(error) => {
                unreadable.push(UnreadableGroup {
                    group: id.clone(),
                    cluster: Side::Source,
                    error,
                });
                continue;
            }
        };
        for c in on_source {
            let tp = TopicPartition {
                topic: c.topic.clone(),
                partition: c.partition,
            };
            let Some(&leo) = partitions.get(&tp) else {
                continue;
            };
            if c.offset.get() < 0 {
                continue;
            }
            let d = on_dest.get(&tp).copied();
            out.push(Exposure {
                group: id.clone(),
                redelivered: d.map(|d| (c.offset.min(leo).get() - d.get()).max(0)),
                not_on_destination: (c.offset.get() - leo.get()).max(0),
                source_committed: c.offset,
                destination_committed: d,
                destination_log_end: leo,
                partition: tp,
            });
        }
    }
    Ok(FailoverReport {
        exposures: out,
        unreadable,
    })
}
