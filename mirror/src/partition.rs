//! One mirror partition's data path, as functions of the destination partition and what the
//! source answered: where to fetch from, applying a fetched partition (append, divergence,
//! out-of-range, corruption), and the stop (failover) sequence of KIP-1279 §9.
//!
//! The fetcher threads and the state machine call these; they hold no state of their own, so the
//! same code runs in the simulation, the tests and the broker.

use crate::source::{ErrorCode, PartitionData};
use bytes::Bytes;
use mirrorlog_engine::epoch_cache::truncation_for_leader_answer;
use mirrorlog_engine::error::EngineError;
use mirrorlog_engine::log::{LeaderOrigin, ReplicaOrigin};
use mirrorlog_engine::manager::PartitionHandle;
use mirrorlog_index::{LeaderEpoch, Offset, TimestampMs};
use mirrorlog_segment::BatchBuilder;
use mirrorlog_segment::batch::Batches;

/// Kafka error codes the data path reacts to.
pub mod codes {
    /// OFFSET_OUT_OF_RANGE
    pub const OFFSET_OUT_OF_RANGE: i16 = 1;
    /// CORRUPT_MESSAGE
    pub const CORRUPT_MESSAGE: i16 = 2;
    /// UNKNOWN_TOPIC_OR_PARTITION
    pub const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;
    /// LEADER_NOT_AVAILABLE
    pub const LEADER_NOT_AVAILABLE: i16 = 5;
    /// NOT_LEADER_OR_FOLLOWER
    pub const NOT_LEADER_OR_FOLLOWER: i16 = 6;
    /// REPLICA_NOT_AVAILABLE
    pub const REPLICA_NOT_AVAILABLE: i16 = 9;
    /// KAFKA_STORAGE_ERROR
    pub const KAFKA_STORAGE_ERROR: i16 = 56;
    /// FENCED_LEADER_EPOCH
    pub const FENCED_LEADER_EPOCH: i16 = 74;
    /// UNKNOWN_LEADER_EPOCH
    pub const UNKNOWN_LEADER_EPOCH: i16 = 75;
    /// OFFSET_NOT_AVAILABLE
    pub const OFFSET_NOT_AVAILABLE: i16 = 78;
    /// UNKNOWN_TOPIC_ID
    pub const UNKNOWN_TOPIC_ID: i16 = 100;
}

/// Whether a partition's fetch error means the node asked may no longer lead it, so the source's
/// metadata should be asked now, not at the next sync (Kafka's consumer requests a metadata update
/// on these in `FetchCollector`).
pub fn is_leader_change_error(code: i16) -> bool {
    matches!(
        code,
        codes::UNKNOWN_TOPIC_OR_PARTITION
            | codes::LEADER_NOT_AVAILABLE
            | codes::NOT_LEADER_OR_FOLLOWER
            | codes::REPLICA_NOT_AVAILABLE
            | codes::KAFKA_STORAGE_ERROR
            | codes::FENCED_LEADER_EPOCH
            | codes::UNKNOWN_LEADER_EPOCH
            | codes::OFFSET_NOT_AVAILABLE
            | codes::UNKNOWN_TOPIC_ID
    )
}

/// Where the next fetch of a partition starts: the destination's log end and the epoch of its
/// last batch (sent as `LastFetchedEpoch`, so the source can answer a divergence).
pub fn fetch_position(dest: &PartitionHandle) -> (Offset, LeaderEpoch) {
    let log = dest.read();
    let leo = log.log_end_offset();
    let epoch = if leo > log.log_start_offset() {
        log.epoch_at(Offset(leo.get() - 1))
            .unwrap_or(LeaderEpoch::NONE)
    } else {
        log.epoch_cache()
            .latest_epoch()
            .unwrap_or(LeaderEpoch::NONE)
    };
    (leo, epoch)
}

/// Where a pipelined fetcher asks next for a partition, from the source's answer to a fetch at
/// some offset, before that answer is applied (see [`next_fetch_position`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NextFetch {
    /// Past the answer's last whole batch: its next offset, and its epoch as `LastFetchedEpoch`
    /// (what [`fetch_position`] will say once the answer is appended).
    After(Offset, LeaderEpoch),
    /// The answer holds no whole batch at or past the fetch offset: ask at the same position.
    Same,
    /// An error, a divergence or an unreadable batch header: applying the answer decides what
    /// the log becomes, so ask from the destination log once it is applied.
    FromLog,
}

/// [`NextFetch`] for `data`, the answer to a fetch at `fetch_offset`: the batches that
/// [`apply_fetched`] would append are those whose last offset is at or past `fetch_offset`, so
/// the next fetch starts after the last of them. Only batch headers are read (no CRC): this is
/// a guess about where the log will end, and [`apply_fetched`] runs only on an answer whose
/// fetch offset the destination log end has reached.
pub fn next_fetch_position(data: &PartitionData, fetch_offset: Offset) -> NextFetch {
    if data.error != 0 || data.diverging_epoch.is_some() {
        return NextFetch::FromLog;
    }
    let mut next = NextFetch::Same;
    for b in Batches::new(data.records.clone())
        .verify(false)
        .legacy(true)
    {
        let Ok(b) = b else {
            return NextFetch::FromLog;
        };
        if b.last_offset() >= fetch_offset {
            next = NextFetch::After(b.next_offset(), b.partition_leader_epoch());
        }
    }
    next
}

/// How far above the source's leader epoch a bump puts the destination's
/// (`LEADER_EPOCH_BUMP_INCREMENT`, KIP-1279 §7).
pub const LEADER_EPOCH_BUMP_INCREMENT: i32 = 10;

/// How close the source's leader epoch may come to the destination's before a bump
/// (`LEADER_EPOCH_BUMP_THRESHOLD`, KIP-1279 §7).
pub const LEADER_EPOCH_BUMP_THRESHOLD: i32 = 3;

/// The leader epoch a destination partition at `local` must be bumped to, given a source epoch
/// (the source partition's leader epoch, or the epoch of a batch fetched from it): `source + 10`
/// once `source > local − 3` (so the destination's epoch stays at or above every source epoch,
/// DLE ≥ SLE, with room for a few source elections between two checks); `None` otherwise, and for
/// an undefined source epoch.
pub fn epoch_bump_target(local: LeaderEpoch, source: LeaderEpoch) -> Option<LeaderEpoch> {
    if source.get() < 0 {
        return None;
    }
    if source.get() > local.get().saturating_sub(LEADER_EPOCH_BUMP_THRESHOLD) {
        Some(LeaderEpoch(
            source.get().saturating_add(LEADER_EPOCH_BUMP_INCREMENT),
        ))
    } else {
        None
    }
}

/// What applying a fetched partition did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FetchOutcome {
    /// Batches appended; the destination log end is now `log_end`.
    Appended {
        /// Whole batches appended.
        batches: u32,
        /// Records in them.
        records: u64,
        /// Bytes appended.
        bytes: u64,
        /// The destination's log end after the append.
        log_end: Offset,
        /// The source's high watermark in that response.
        source_high_watermark: Offset,
        /// The destination's new leader epoch when a fetched batch's epoch was above it
        /// (reactive bump) or within [`LEADER_EPOCH_BUMP_THRESHOLD`] of it (proactive bump); the
        /// bump is atomic with the append (one write lock), so no reader sees a batch epoch
        /// above the partition's leader epoch.
        epoch_bump: Option<LeaderEpoch>,
    },
    /// Nothing new.
    Empty {
        /// The source's high watermark in that response.
        source_high_watermark: Offset,
    },
    /// The source's log disagrees with ours (an unclean election there): the destination must
    /// truncate to `truncate_to` (Kafka's follower rule). `completed` false: ask again after.
    Diverged {
        /// The truncation offset.
        truncate_to: Offset,
        /// Whether the truncation completes the reconciliation.
        completed: bool,
        /// The source's `(epoch, end offset)` answer.
        source: (LeaderEpoch, Offset),
    },
    /// Our fetch offset is below the source's log start: start over at it (KIP-1279 §8).
    BelowSourceLogStart {
        /// The source's log start offset.
        source_log_start: Offset,
    },
    /// A transient error (leadership moved, stale epochs): refresh metadata and retry.
    Retriable(ErrorCode),
    /// A permanent problem for this partition: it goes FAILED with this reason.
    Fatal(String),
}

/// Applies one partition of a fetch response to the destination partition, as a follower of the
/// source: batches are appended byte for byte (offsets, producer ids, epochs and CRCs kept) with
/// the engine's mirror append, legacy entries (magic 0 and 1, which a Kafka 4 source still serves
/// from an older Kafka's segments) as any batch; a partial batch at the end is left for the next
/// fetch (a legacy entry's size field sits where a v2 batch's length does); the high
/// watermark follows the log end (the destination is its only replica); the log start follows the
/// source's.
///
/// # Errors
/// Storage failures of the destination (the caller fails the partition), its data directory
/// offline included: nothing is written into a directory a storage failure took offline.
pub fn apply_fetched(
    dest: &PartitionHandle,
    fetch_offset: Offset,
    data: &PartitionData,
) -> Result<FetchOutcome, EngineError> {
    dest.check_online()?;
    if let Some((epoch, end)) = data.diverging_epoch {
        if end.get() < 0 {
            // Not an end offset (a source bug or a hostile answer): never a truncation target.
            return Ok(FetchOutcome::Retriable(codes::OFFSET_OUT_OF_RANGE));
        }
        let log = dest.read();
        let d = truncation_for_leader_answer(
            epoch,
            end,
            log.epoch_cache(),
            log.log_end_offset(),
            fetch_offset,
        );
        return Ok(FetchOutcome::Diverged {
            truncate_to: d.truncate_to,
            completed: d.completed,
            source: (epoch, end),
        });
    }
    match data.error {
        0 => {}
        codes::OFFSET_OUT_OF_RANGE => {
            if data.log_start_offset.get() < 0 || data.high_watermark.get() < 0 {
                // Offsets unknown (the caller asks the source for them first): nothing to act on.
                return Ok(FetchOutcome::Retriable(data.error));
            }
            if fetch_offset < data.log_start_offset {
                return Ok(FetchOutcome::BelowSourceLogStart {
                    source_log_start: data.log_start_offset,
                });
            }
            if fetch_offset <= data.high_watermark {
                // In range after all (the log start or end moved since): ask again.
                return Ok(FetchOutcome::Retriable(data.error));
            }
            // Ahead of the source's log end: the source lost data (an unclean election on a
            // source without epochs in its answers). Treat as a divergence at its end.
            return Ok(FetchOutcome::Diverged {
                truncate_to: data.high_watermark.min(fetch_offset),
                completed: true,
                source: (LeaderEpoch::NONE, data.high_watermark),
            });
        }
        codes::NOT_LEADER_OR_FOLLOWER
        | codes::FENCED_LEADER_EPOCH
        | codes::UNKNOWN_LEADER_EPOCH => {
            return Ok(FetchOutcome::Retriable(data.error));
        }
        codes::CORRUPT_MESSAGE => {
            return Ok(FetchOutcome::Fatal(
                "the source reports a corrupt batch".into(),
            ));
        }
        e => return Ok(FetchOutcome::Retriable(e)),
    }
    // Keep whole batches from the fetch offset on; a batch that straddles it would mean our log
    // and the source's disagree on batch boundaries.
    let mut start = None;
    let mut end = 0usize;
    let mut max_epoch = LeaderEpoch::NONE;
    for b in Batches::new(data.records.clone())
        .verify(false)
        .legacy(true)
    {
        let b = match b {
            Ok(b) => b,
            Err(e) => {
                return Ok(FetchOutcome::Fatal(format!(
                    "corrupt batch from the source: {e}"
                )));
            }
        };
        if b.last_offset() < fetch_offset {
            continue;
        }
        if b.base_offset() < fetch_offset {
            // Kafka's follower rule (`Partition.appendRecordsToFollowerOrFutureReplica`): when
            // the source's log start falls inside a batch and our log is empty, start our log at
            // that batch's base offset and take the batch whole.
            let empty_at_start = {
                let log = dest.read();
                log.log_end_offset() == fetch_offset && log.log_start_offset() == fetch_offset
            };
            if empty_at_start && start.is_none() {
                dest.write().truncate_fully_and_start_at(b.base_offset())?;
                start = Some(b.position() as usize);
                end = b.position() as usize + b.size_bytes();
                max_epoch = max_epoch.max(b.partition_leader_epoch());
                continue;
            }
            return Ok(FetchOutcome::Fatal(format!(
                "source batch {}..={} straddles the destination log end {fetch_offset}",
                b.base_offset(),
                b.last_offset()
            )));
        }
        start.get_or_insert(b.position() as usize);
        end = b.position() as usize + b.size_bytes();
        max_epoch = max_epoch.max(b.partition_leader_epoch());
    }
    let Some(start) = start else {
        maybe_follow_source_log_start(dest, data.log_start_offset)?;
        return Ok(FetchOutcome::Empty {
            source_high_watermark: data.high_watermark,
        });
    };
    let bytes: Bytes = data.records.slice(start..end);
    // DLE ≥ SLE (KIP-1279 §7): a batch epoch above the destination's leader epoch, or close to
    // it, bumps the destination's epoch along with the append (Kafka's followers reject a batch
    // whose epoch is above their leader's, KAFKA-18723). Both happen under the partition's write
    // lock, so no reader sees a batch epoch above the leader epoch; the bump follows a successful
    // append, so a refused (corrupt) batch bumps nothing the state would not record.
    let mut epoch_bump = None;
    let info = {
        let mut log = dest.write();
        let target = epoch_bump_target(log.leader_epoch(), max_epoch);
        let info = match log.append_as_follower(bytes, ReplicaOrigin::Mirror) {
            Ok(i) => i,
            Err(EngineError::Corrupt(e)) => {
                return Ok(FetchOutcome::Fatal(format!(
                    "corrupt batch from the source: {e}"
                )));
            }
            Err(EngineError::UnexpectedAppendOffset {
                first_offset,
                log_end_offset,
            }) => {
                return Ok(FetchOutcome::Fatal(format!(
                    "source batch at {first_offset} is below the destination log end {log_end_offset}"
                )));
            }
            Err(e) => return Err(e),
        };
        if let Some(t) = target {
            epoch_bump = Some(log.raise_leader_epoch(t));
        }
        let leo = log.log_end_offset();
        log.update_high_watermark(leo);
        info
    };
    maybe_follow_source_log_start(dest, data.log_start_offset)?;
    Ok(FetchOutcome::Appended {
        batches: info.batch_count,
        records: info.record_count,
        bytes: info.bytes,
        log_end: dest.read().log_end_offset(),
        source_high_watermark: data.high_watermark,
        epoch_bump,
    })
}

/// The destination's log start follows the source's (never past the destination's high
/// watermark).
fn maybe_follow_source_log_start(
    dest: &PartitionHandle,
    source_log_start: Offset,
) -> Result<(), EngineError> {
    let mut log = dest.write();
    let target = source_log_start.min(log.high_watermark());
    if target > log.log_start_offset() {
        log.maybe_increment_log_start_offset(target)?;
    }
    Ok(())
}

/// What the stop sequence did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StopReport {
    /// The last mirror epoch: the latest epoch of mirrored data (−1 when nothing was mirrored).
    pub last_mirror_epoch: LeaderEpoch,
    /// The local leader epoch the partition continues with (above everything mirrored).
    pub new_leader_epoch: LeaderEpoch,
    /// Producers whose open transactions were aborted.
    pub aborted_producers: Vec<i64>,
    /// Offset of the MIRROR_PID_RESET barrier.
    pub reset_offset: Offset,
    /// The log end after the sequence.
    pub log_end: Offset,
}

/// KIP-1279's stop (failover) sequence for one partition, after its fetcher was removed:
/// record the last mirror epoch, bump the local leader epoch above everything mirrored, append an
/// ABORT marker for every open transaction (so READ_COMMITTED consumers never see a partial
/// one), append one MIRROR_PID_RESET barrier (so no producer learned from the source survives),
/// make everything durable and the partition writable. The last mirror epoch is read from the
/// log ([`last_mirrored_epoch`]) first; a caller that may be re-running an interrupted stop uses
/// [`stop_partition_after`] with the epoch it recorded before the first attempt.
///
/// # Errors
/// Storage failures; the partition then stays read-only.
pub fn stop_partition(
    dest: &PartitionHandle,
    source_cluster_id: &str,
    now_ms: i64,
) -> Result<StopReport, EngineError> {
    let lme = last_mirrored_epoch(dest);
    stop_partition_after(dest, lme, source_cluster_id, now_ms)
}

/// The latest leader epoch in the partition's epoch cache: before a stop, the epoch of the
/// newest mirrored data (mirror appends keep the source's epochs; the destination's own bumps
/// only raise the epoch it stamps, they add no cache entry). −1 for an empty cache.
pub fn last_mirrored_epoch(dest: &PartitionHandle) -> LeaderEpoch {
    dest.read()
        .epoch_cache()
        .latest_epoch()
        .unwrap_or(LeaderEpoch::NONE)
}

/// The stop sequence of [`stop_partition`] with the last mirror epoch `lme` given: what a re-run
/// of an interrupted stop needs (a crash or a storage failure after the first attempt assigned
/// the stop's own epoch, so the cache no longer says what was mirrored). Running it again is
/// safe and writes no second barrier: a stop that already wrote its MIRROR_PID_RESET (the
/// first batch of the stop's epoch after its ABORT markers) is only finished (flushed, high
/// watermark, writable), so local writes made after it are never aborted or reset (KIP-1279
/// §9: one barrier per partition). A stop cut short before its barrier bumps the epoch again,
/// aborts whatever is still open and writes the barrier; it never loses data.
///
/// # Errors
/// Storage failures; the partition then stays read-only.
pub fn stop_partition_after(
    dest: &PartitionHandle,
    lme: LeaderEpoch,
    source_cluster_id: &str,
    now_ms: i64,
) -> Result<StopReport, EngineError> {
    let mut log = dest.write();
    if let Some((epoch, reset_offset)) = finished_stop(&log, lme)? {
        log.flush()?;
        let leo = log.log_end_offset();
        log.update_high_watermark(leo);
        log.set_read_only(false);
        return Ok(StopReport {
            last_mirror_epoch: lme,
            new_leader_epoch: epoch,
            aborted_producers: vec![],
            reset_offset,
            log_end: leo,
        });
    }
    // Above everything mirrored and above every bump (so above the source's epoch too: offsets
    // committed with a source epoch stay valid here). Saturating: a source may send any epoch.
    let new_epoch = LeaderEpoch(lme.max(log.leader_epoch()).get().max(-1).saturating_add(1));
    log.assign_leader_epoch(new_epoch)?;
    // Each marker carries the producer's epoch and the coordinator epoch of the source's last
    // marker for it, so the engine's epoch checks accept it.
    let open: Vec<(i64, i16, i32)> = log
        .producer_state()
        .ongoing_txns()
        .filter_map(|t| {
            let e = log.producer_state().entry(t.producer_id)?;
            Some((
                t.producer_id.get(),
                e.producer_epoch.get(),
                e.coordinator_epoch.max(0),
            ))
        })
        .collect();
    let mut aborted = vec![];
    for (pid, epoch, coordinator_epoch) in open {
        let marker = BatchBuilder::end_txn_marker(
            mirrorlog_index::ProducerId(pid),
            mirrorlog_index::ProducerEpoch(epoch),
            false,
            coordinator_epoch,
            TimestampMs(now_ms),
        )
        .build()
        .into_bytes();
        log.append_as_leader(marker, new_epoch, LeaderOrigin::Coordinator)?;
        aborted.push(pid);
    }
    let reset = BatchBuilder::mirror_pid_reset(Some(source_cluster_id), TimestampMs(now_ms))
        .build()
        .into_bytes();
    let info = log.append_as_leader(reset, new_epoch, LeaderOrigin::Coordinator)?;
    log.flush()?;
    let leo = log.log_end_offset();
    log.update_high_watermark(leo);
    log.set_read_only(false);
    Ok(StopReport {
        last_mirror_epoch: lme,
        new_leader_epoch: new_epoch,
        aborted_producers: aborted,
        reset_offset: info.first_offset,
        log_end: leo,
    })
}

/// LOG_ALIGNMENT's truncation (KIP-1279 §8): truncate to the end of the last mirror epoch `lme`
/// in the local epoch cache (OffsetForLeaderEpoch-style), or to empty when there is none (−1:
/// a one-way mirror, or a source that does not know us).
///
/// A storage failure of the truncation fails the log and takes its data directory offline
/// (the engine sees to it, see `mirrorlog_engine::log::LogFailureListener`); a directory already
/// offline is not written.
///
/// # Errors
/// Storage failures, the data directory offline.
pub fn align_to_last_mirror_epoch(
    dest: &PartitionHandle,
    lme: LeaderEpoch,
) -> Result<Offset, EngineError> {
    dest.check_online()?;
    let mut log = dest.write();
    if lme == LeaderEpoch::NONE {
        let start = Offset(0);
        log.truncate_fully_and_start_at(start)?;
        return Ok(start);
    }
    let (_, end) = log.epoch_cache().end_offset_for(lme, log.log_end_offset());
    let target = if end == Offset::UNKNOWN {
        Offset(0)
    } else {
        end.min(log.log_end_offset())
    };
    if target < log.log_start_offset() {
        log.truncate_fully_and_start_at(target)?;
    } else {
        log.truncate_to(target)?;
    }
    Ok(log.log_end_offset())
}

/// When a stop for `lme` already wrote its barrier: the stop's epoch (the cache's latest, above
/// `lme`) and the barrier's offset. The stop's first batches in its epoch are its ABORT markers
/// and then the MIRROR_PID_RESET; anything else first means the barrier was never written.
fn finished_stop(
    log: &mirrorlog_engine::log::PartitionLog,
    lme: LeaderEpoch,
) -> Result<Option<(LeaderEpoch, Offset)>, EngineError> {
    use mirrorlog_segment::batch::ControlRecordType as C;
    let Some(last) = log.epoch_cache().entries().last().copied() else {
        return Ok(None);
    };
    if last.epoch <= lme {
        return Ok(None);
    }
    let mut at = last.start_offset;
    while at < log.log_end_offset() {
        let info = log.read(
            at,
            64 << 10,
            mirrorlog_engine::log::FetchIsolation::LogEnd,
            true,
        )?;
        let Some(data) = info.records else {
            return Ok(None);
        };
        let before = at;
        for batch in Batches::new(data.slice.read_all()?).legacy(true) {
            let batch = batch?;
            if batch.next_offset() <= at {
                continue;
            }
            match batch.control_record()?.map(|c| c.kind) {
                Some(C::Abort) => at = batch.next_offset(),
                Some(C::MirrorPidReset) => return Ok(Some((last.epoch, batch.base_offset()))),
                _ => return Ok(None),
            }
        }
        if at <= before {
            return Ok(None);
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_source_epoch_within_three_of_ours_bumps_to_ten_above_it() {
        // Source epochs at or below local − 3 leave the destination alone.
        assert_eq!(epoch_bump_target(LeaderEpoch(13), LeaderEpoch(10)), None);
        assert_eq!(epoch_bump_target(LeaderEpoch(13), LeaderEpoch(0)), None);
        // Within 3 (proactive), equal, or above (reactive): source + 10.
        assert_eq!(
            epoch_bump_target(LeaderEpoch(13), LeaderEpoch(11)),
            Some(LeaderEpoch(21))
        );
        assert_eq!(
            epoch_bump_target(LeaderEpoch(13), LeaderEpoch(13)),
            Some(LeaderEpoch(23))
        );
        assert_eq!(
            epoch_bump_target(LeaderEpoch(13), LeaderEpoch(40)),
            Some(LeaderEpoch(50))
        );
    }

    #[test]
    fn a_destination_without_an_epoch_is_bumped_by_the_first_source_epoch() {
        assert_eq!(
            epoch_bump_target(LeaderEpoch::NONE, LeaderEpoch(0)),
            Some(LeaderEpoch(10))
        );
    }

    #[test]
    fn an_undefined_source_epoch_never_bumps() {
        assert_eq!(
            epoch_bump_target(LeaderEpoch::NONE, LeaderEpoch::NONE),
            None
        );
        assert_eq!(epoch_bump_target(LeaderEpoch(5), LeaderEpoch::NONE), None);
    }

    #[test]
    fn the_bump_target_never_overflows() {
        assert_eq!(
            epoch_bump_target(LeaderEpoch(i32::MAX), LeaderEpoch(i32::MAX)),
            Some(LeaderEpoch(i32::MAX))
        );
    }
}
