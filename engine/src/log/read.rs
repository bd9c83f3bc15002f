//! Reads: by offset, bounded by the log end (replicas), the high watermark (READ_UNCOMMITTED
//! consumers) or the last stable offset (READ_COMMITTED, with the aborted transactions in range);
//! and the offset lookups ListOffsets needs.

use super::PartitionLog;
use crate::error::{EngineError, EngineResult};
use mirrorlog_index::FilePosition;
use mirrorlog_index::{AbortedTxn, LeaderEpoch, Offset, TimestampMs};
use mirrorlog_segment::segment::FetchData;

/// How far a read may go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FetchIsolation {
    /// To the log end: followers and mirrors of this log.
    LogEnd,
    /// To the high watermark: READ_UNCOMMITTED consumers.
    HighWatermark,
    /// To the last stable offset: READ_COMMITTED consumers.
    TxnCommitted,
}

/// What a read returns.
#[derive(Debug, Clone)]
pub struct FetchDataInfo {
    /// The bytes to send (from the batch holding the start offset), or nothing when the start is
    /// at the bound.
    pub records: Option<FetchData>,
    /// For [`FetchIsolation::TxnCommitted`], the aborted transactions overlapping the range.
    pub aborted_transactions: Option<Vec<AbortedTxn>>,
    /// High watermark at the time of the read.
    pub high_watermark: Offset,
    /// Last stable offset.
    pub last_stable_offset: Offset,
    /// Log start offset.
    pub log_start_offset: Offset,
    /// Log end offset.
    pub log_end_offset: Offset,
    /// Where the read started (Kafka's `fetchOffsetMetadata`): the batch holding the start
    /// offset, or, when nothing is read, where the start offset lies. A waiting fetch measures
    /// the bytes it could read from here ([`PartitionLog::bound_position`]).
    pub fetch_position: LogPosition,
}

/// Where an offset lies in the log, Kafka's `LogOffsetMetadata`: its segment and the byte
/// position there of the batch holding it (the segment's end for the log end offset).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogPosition {
    /// The offset.
    pub offset: Offset,
    /// The base offset of the segment holding it.
    pub segment_base: Offset,
    /// The byte position in that segment.
    pub position: FilePosition,
    /// The log's [`truncations`](PartitionLog::truncations) when this was taken. Positions
    /// taken across a truncation do not compare: the bytes at the earlier one may be gone, or
    /// rewritten with other batches (a mirror's log alignment truncates a log consumers read,
    /// and appends again; a Kafka leader never truncates).
    pub truncations: u64,
}

/// Which offset a ListOffsets request asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OffsetLookup {
    /// The log start offset (−2).
    Earliest,
    /// The bound of the isolation level: LEO, HW or LSO (−1).
    Latest(FetchIsolation),
    /// The record with the largest timestamp (−3).
    MaxTimestamp,
    /// The first record with a timestamp ≥ this (≥ 0).
    Timestamp(TimestampMs),
}

impl PartitionLog {
    /// The last stable offset: the first unstable offset (an open or not yet replicated
    /// transaction) when it is below the high watermark, else the high watermark.
    pub fn last_stable_offset(&self) -> Offset {
        match self.producers.first_unstable_offset() {
            Some(fuo) if fuo.max(self.log_start_offset) < self.high_watermark => {
                fuo.max(self.log_start_offset)
            }
            _ => self.high_watermark,
        }
    }

    fn upper_bound(&self, isolation: FetchIsolation) -> Offset {
        match isolation {
            FetchIsolation::LogEnd => self.log_end_offset(),
            FetchIsolation::HighWatermark => self.high_watermark,
            FetchIsolation::TxnCommitted => self.last_stable_offset(),
        }
    }

    /// Reads from `start` at most `max_bytes` (at least one whole batch when `min_one_batch`),
    /// never past the isolation bound. Returns a file slice, ready for `sendfile`. Without
    /// `min_one_batch`, a first batch larger than `max_bytes` is cut and flagged
    /// ([`FetchData::first_entry_incomplete`], Kafka's `firstEntryIncomplete`): a Fetch answers
    /// no records then, as Kafka's `ReplicaManager.readFromLog` does.
    ///
    /// # Errors
    /// [`EngineError::OffsetOutOfRange`] when `start` is below the log start or above the log end;
    /// [`EngineError::LogDirOffline`] when the log failed ([`failure`](Self::failure)).
    pub fn read(
        &self,
        start: Offset,
        max_bytes: u32,
        isolation: FetchIsolation,
        min_one_batch: bool,
    ) -> EngineResult<FetchDataInfo> {
        self.check_not_failed()?;
        let leo = self.log_end_offset();
        if start < self.log_start_offset || start > leo {
            return Err(EngineError::OffsetOutOfRange {
                requested: start,
                log_start: self.log_start_offset,
                log_end: leo,
            });
        }
        let upper = self.upper_bound(isolation);
        let mut info = FetchDataInfo {
            records: None,
            aborted_transactions: None,
            high_watermark: self.high_watermark,
            last_stable_offset: self.last_stable_offset(),
            log_start_offset: self.log_start_offset,
            log_end_offset: leo,
            fetch_position: self.end_position(),
        };
        if start >= upper {
            // At the bound this is the bound's own position, as Kafka's empty read names it.
            info.fetch_position = self.log_position(start)?;
            if isolation == FetchIsolation::TxnCommitted {
                info.aborted_transactions = Some(vec![]);
            }
            return Ok(info);
        }
        let upper_pos = self.position_of(upper)?;
        // Aborted transactions are reported up to the end of the bytes returned (Kafka's
        // `fetchUpperBoundOffset`), not up to the bound of the whole log.
        let mut txn_upper = upper;
        for seg in self.segments_from(start) {
            let max_pos = match upper_pos {
                Some((base, pos)) if base == seg.base_offset() => Some(pos),
                _ => None,
            };
            if let Some(d) = seg.read(start, max_bytes, max_pos, min_one_batch)? {
                let end = FilePosition(d.slice.position.get() + d.slice.length);
                let seg_base = seg.base_offset();
                let bound = seg
                    .offset_index()
                    .fetch_upper_bound_offset(end)
                    .or_else(|| {
                        self.segments_from(seg_base)
                            .map(|s| s.base_offset())
                            .find(|&b| b > seg_base)
                    })
                    .unwrap_or(leo);
                // Not capped at the LSO: Kafka's bound (`addAbortedTransactions`) is the index
                // entry after the bytes read, which may lie past the LSO, and the aborts it
                // lists up to there are part of the response.
                txn_upper = bound;
                info.fetch_position = LogPosition {
                    offset: start,
                    segment_base: seg_base,
                    position: d.slice.position,
                    truncations: self.truncations,
                };
                // A limit of 0 (a partition after others filled the response) reads nothing,
                // and ends the read at the first segment holding `start`, as Kafka's.
                info.records = (d.slice.length > 0).then_some(d);
                break;
            }
            if max_pos.is_some() {
                break;
            }
        }
        if isolation == FetchIsolation::TxnCommitted {
            info.aborted_transactions = Some(self.collect_aborted_txns(start, txn_upper)?);
        }
        Ok(info)
    }

    /// Where the isolation bound lies now (Kafka's high watermark, last stable offset or log end
    /// offset metadata): a waiting fetch compares it with its read's
    /// [`FetchDataInfo::fetch_position`], as Kafka's `DelayedFetch` does.
    ///
    /// # Errors
    /// A segment's index or `.log` cannot be read while looking for the bound's batch.
    pub fn bound_position(&self, isolation: FetchIsolation) -> EngineResult<LogPosition> {
        self.log_position(self.upper_bound(isolation))
    }

    /// Where `offset` (at most the log end) lies: the batch holding it, else the active
    /// segment's end.
    fn log_position(&self, offset: Offset) -> EngineResult<LogPosition> {
        if offset >= self.log_end_offset() {
            return Ok(self.end_position());
        }
        Ok(match self.position_of(offset)? {
            Some((segment_base, position)) => LogPosition {
                offset,
                segment_base,
                position,
                truncations: self.truncations,
            },
            None => LogPosition {
                offset,
                ..self.end_position()
            },
        })
    }

    /// Where the log end offset lies: the active segment's end.
    fn end_position(&self) -> LogPosition {
        LogPosition {
            offset: self.log_end_offset(),
            segment_base: self.active.base_offset(),
            position: FilePosition(self.active.size_bytes()),
            truncations: self.truncations,
        }
    }

    /// The (segment base, byte position) where offset `bound` starts: reads stop there.
    fn position_of(&self, bound: Offset) -> EngineResult<Option<(Offset, FilePosition)>> {
        for seg in self.segments_from(bound) {
            if let Some(loc) = seg.find_batch(bound)? {
                return Ok(Some((seg.base_offset(), loc.position)));
            }
        }
        Ok(None)
    }

    /// Kafka's `collectAbortedTransactions`: every aborted transaction with a marker at or after
    /// `start` and a first offset below `upper`, from the segments holding `start` on.
    ///
    /// # Errors
    /// A segment's transaction index cannot be read (an I/O error, or an entry that does not
    /// parse).
    pub fn collect_aborted_txns(
        &self,
        start: Offset,
        upper: Offset,
    ) -> EngineResult<Vec<AbortedTxn>> {
        let mut out = vec![];
        for seg in self.segments_from(start) {
            let (mut txns, done) = seg.txn_index().collect_aborted_txns(start, upper)?;
            out.append(&mut txns);
            if done {
                break;
            }
        }
        Ok(out)
    }

    /// ListOffsets: the offset, its timestamp (−1 when not by time) and the leader epoch of that
    /// offset. `None` when no record matches (a timestamp after every record).
    ///
    /// # Errors
    /// A segment's index or `.log` cannot be read while looking for the offset (an I/O error, or
    /// a batch header that does not parse).
    pub fn fetch_offset(
        &self,
        lookup: OffsetLookup,
    ) -> EngineResult<Option<(Offset, TimestampMs, Option<LeaderEpoch>)>> {
        let with_epoch = |o: Offset, ts: TimestampMs| Some((o, ts, self.epoch_at(o)));
        match lookup {
            OffsetLookup::Earliest => Ok(with_epoch(self.log_start_offset, TimestampMs::NONE)),
            OffsetLookup::Latest(iso) => {
                let o = self.upper_bound(iso);
                Ok(Some((o, TimestampMs::NONE, self.epochs.latest_epoch())))
            }
            OffsetLookup::MaxTimestamp => {
                let mut best: Option<(TimestampMs, Offset)> = None;
                // Segments wholly below the log start (DeleteRecords; the next retention check
                // deletes them) are not looked at: their records are gone for a client.
                for seg in self.segments_from(self.log_start_offset) {
                    let (ts, off) = seg.largest_timestamp_and_offset()?;
                    if ts.get() >= 0 && best.is_none_or(|(b, _)| ts > b) {
                        best = Some((ts, off));
                    }
                }
                let Some((ts, batch_last)) = best else {
                    return Ok(None);
                };
                // The exact record: the first one in that batch carrying the max timestamp.
                for seg in self.segments_from(batch_last) {
                    if let Some(loc) = seg.find_batch(batch_last)? {
                        let batch = seg.read_batch(&loc)?;
                        // Offsets and timestamps only: streamed, as Kafka does.
                        for r in batch.record_metas()? {
                            let r = r?;
                            if r.timestamp == ts && r.offset >= self.log_start_offset {
                                return Ok(with_epoch(r.offset, ts));
                            }
                        }
                        return Ok(with_epoch(batch_last.max(self.log_start_offset), ts));
                    }
                }
                Ok(None)
            }
            OffsetLookup::Timestamp(target) => {
                for seg in self.segments_from(self.log_start_offset) {
                    if seg.largest_timestamp()? < target {
                        continue;
                    }
                    if let Some((o, ts)) =
                        seg.find_offset_by_timestamp(target, self.log_start_offset)?
                    {
                        return Ok(with_epoch(o, ts));
                    }
                }
                Ok(None)
            }
        }
    }

    /// The leader epoch of `offset` from the epoch cache.
    pub fn epoch_at(&self, offset: Offset) -> Option<LeaderEpoch> {
        self.epochs.epoch_for_offset(offset)
    }
}
