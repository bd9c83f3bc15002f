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

/// Computes the report for `partitions` (mirrored partitions → destination log end).
///
/// # Errors
/// Either cluster is unreachable, or a group pattern is not a valid regex.
pub fn failover_exposure(
    source: &dyn SourceCluster,
    dest: &dyn SourceCluster,
    partitions: &BTreeMap<TopicPartition, Offset>,
    groups_include: &[String],
    groups_exclude: &[String],
) -> Result<Vec<Exposure>, SourceError> {
    let include =
        compile_patterns("mirror.groups.include", groups_include).map_err(SourceError::Protocol)?;
    let exclude =
        compile_patterns("mirror.groups.exclude", groups_exclude).map_err(SourceError::Protocol)?;
    let mut out = vec![];
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
        for c in source.committed_offsets(id)? {
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
    Ok(out)
}
