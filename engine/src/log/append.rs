//! Appends by origin. See `spec/kafka-storage-format.md` §8 for Kafka's rules this follows.
//!
//! - **Leader** ([`PartitionLog::append_as_leader`]): one batch per call. For a client:
//!   `baseOffset == 0`, `lastOffsetDelta` = records − 1, no control batch, size ≤
//!   `max.message.bytes`, timestamps within `message.timestamp.before/after.max.ms` (a batch
//!   flagged LogAppendTime: its records at its max timestamp, the flag cleared, refused on a
//!   LogAppendTime topic), producer checks (duplicates return the original offsets, sequence,
//!   epoch, transaction state), a rebuild only when the topic's `compression.type` differs or a
//!   compressed batch's record offset deltas are not 0, 1, 2, … (an uncompressed one keeps
//!   them, as Kafka); a read-only (mirror) partition refuses it. For the
//!   coordinator: epoch checks only. Then offsets are assigned from the log end and the leader
//!   epoch (and for LogAppendTime topics the append time, with a new CRC) stamped in place.
//! - **Follower / mirror** ([`PartitionLog::append_as_follower`]): any number of batches as the
//!   leader or source wrote them — offsets, producer ids, sequences, epochs and CRCs kept; only
//!   CRC and offset continuity are checked (first offset ≥ log end, increasing); the epoch cache
//!   follows each batch's partition leader epoch; producer state and the transaction index are
//!   rebuilt locally; MIRROR_PID_RESET forgets every producer; no timestamp bounds. Legacy
//!   entries (magic 0 and 1, an older Kafka's that a Kafka 4 leader or source still serves)
//!   are taken as Kafka's replica append takes them: CRC-32 and offsets checked (a compressed
//!   wrapper by its last offset, the only one its header holds), no producer state, and a
//!   non-empty epoch cache cleared (`clearAndFlush`, Kafka's answer to a format regression).

use super::{PartitionLog, record_completed_txn};
use crate::error::{EngineError, EngineResult, FlaggedRecord, OutOfRangeRecord};
use crate::producer_state::{AppendOrigin, BatchInfo, ProducerStateError, Transition};
use bytes::{Bytes, BytesMut};
use mirrorlog_index::{LeaderEpoch, Offset, TimestampMs};
use mirrorlog_segment::batch::legacy::RECORD_OVERHEAD_V0;
use mirrorlog_segment::batch::{Batches, LOG_OVERHEAD, MAGIC_V2, RECORD_BATCH_OVERHEAD, field};
use mirrorlog_segment::{
    BatchBuilder, BatchError, BatchHeaderMut, Compression, RecordBatch, TimestampType,
};

/// Who appends as leader.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeaderOrigin {
    /// A producer (every check). A transactional batch may open a transaction here: the caller
    /// has verified with the transaction coordinator that this partition is in the producer's
    /// transaction (KIP-890 part 1), or runs without verification (Kafka before 3.6).
    Client,
    /// A producer whose transactional batch was *not* verified with its transaction
    /// coordinator (the broker refuses such a Produce request outright, as Kafka does; for
    /// embedders that cannot verify): every check of
    /// [`Client`](Self::Client), and a transactional batch may only continue a transaction the
    /// producer already has open in this partition at the batch's epoch — one that would open a
    /// transaction, or join one open at an older epoch, fails with `INVALID_TXN_STATE`, as
    /// Kafka's log refuses a transactional batch without a verification guard.
    ClientUnverified,
    /// The mirror's stop sequence (markers, barriers), and coordinators writing their own
    /// internal partitions: writes even a read-only partition.
    Coordinator,
    /// The transaction coordinator's markers in a partition producers write (EndTxn, timeouts,
    /// WriteTxnMarkers): as [`Coordinator`](Self::Coordinator), but a read-only (mirror)
    /// partition refuses them, under the same lock as the append, with
    /// [`EngineError::ReadOnly`] — a mirror partition's transactions end with the source's
    /// markers or the ABORTs of its stop, and a marker of ours would take an offset the
    /// source's next batch needs.
    TxnMarker,
}

impl LeaderOrigin {
    /// A producer's append ([`Client`](Self::Client) or
    /// [`ClientUnverified`](Self::ClientUnverified)).
    pub fn is_client(self) -> bool {
        matches!(self, LeaderOrigin::Client | LeaderOrigin::ClientUnverified)
    }
}

/// Who appends as a replica.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplicaOrigin {
    /// A follower of this cluster's leader.
    Replication,
    /// A mirror fetcher copying a source cluster (KIP-1279).
    Mirror,
}

/// What an append did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogAppendInfo {
    /// First offset appended (for a duplicate: of the original batch).
    pub first_offset: Offset,
    /// Last offset appended.
    pub last_offset: Offset,
    /// Largest batch max timestamp appended.
    pub max_timestamp: TimestampMs,
    /// The broker time stamped on a LogAppendTime topic; for a duplicate, the original batch's
    /// max timestamp whatever the topic's type (as Kafka answers one).
    pub log_append_time: Option<TimestampMs>,
    /// The log start offset after the append.
    pub log_start_offset: Offset,
    /// Records appended.
    pub record_count: u64,
    /// Whole batches appended.
    pub batch_count: u32,
    /// Bytes appended.
    pub bytes: u64,
    /// A retried producer batch already in the log: nothing was appended.
    pub duplicate: bool,
}

impl PartitionLog {
    /// Appends one batch as the partition leader; see the module docs for the checks. Returns the
    /// offsets assigned. Not durable on return unless the flush policy flushed: call
    /// [`flush`](Self::flush) (or the log manager's durable append) for that.
    ///
    /// # Errors
    /// [`EngineError::ReadOnly`] for a client append to a mirror partition; `Corrupt`,
    /// `InvalidRecord`, `RecordTooLarge`, `InvalidTimestamp`, `ProducerState` for a batch Kafka
    /// would refuse (nothing is written); `Segment`/`Index` when storage fails.
    pub fn append_as_leader(
        &mut self,
        records: Bytes,
        leader_epoch: LeaderEpoch,
        origin: LeaderOrigin,
    ) -> EngineResult<LogAppendInfo> {
        self.check_writable()?;
        let now = self.clock.now_ms();
        if (origin.is_client() || origin == LeaderOrigin::TxnMarker) && self.config.read_only {
            return Err(EngineError::ReadOnly(self.name.clone()));
        }
        if origin.is_client() && frames_as_one_batch(&records) {
            self.precheck_client_batch(&records)?;
        }
        let mut batch = single_batch(records).map_err(|e| match origin.is_client() {
            true => client_batch_error(e),
            false => e,
        })?;
        // The largest record timestamp of a client batch (CreateTime topics): the header's
        // `maxTimestamp` is set to it, as Kafka's LogValidator does, rather than trusted.
        let mut max_record_ts = None;
        if origin.is_client() {
            let check = self.validate_client_batch(&batch, now)?;
            max_record_ts = check.max_record_ts;
            let codec = batch.compression()?;
            let target = self.config.compression.codec().unwrap_or(codec);
            // Kafka's `LogValidator` rebuilds the batch when the topic's codec differs, and a
            // compressed one whose offset deltas are not 0, 1, 2, … (in place there means
            // keeping them); an uncompressed one keeps its deltas in place.
            if target != codec || (!check.consecutive && codec != Compression::None) {
                batch = recompress(&batch, target)?;
                if batch.size_bytes() > self.config.max_message_bytes as usize {
                    return Err(EngineError::RecordTooLarge {
                        size: batch.size_bytes(),
                        max: self.config.max_message_bytes as usize,
                    });
                }
            }
        }
        // Duplicate detection looks at sequences only, so it can run before offsets exist.
        let pre = BatchInfo::from_batch(&batch)?;
        let producer_origin = match origin {
            LeaderOrigin::Client | LeaderOrigin::ClientUnverified => AppendOrigin::Client,
            LeaderOrigin::Coordinator | LeaderOrigin::TxnMarker => AppendOrigin::Coordinator,
        };
        let pre_transition = self.producers.transition(&pre, producer_origin);
        if let Ok(Transition::Duplicate(meta)) = pre_transition {
            return Ok(LogAppendInfo {
                first_offset: meta.first_offset(),
                last_offset: meta.last_offset,
                max_timestamp: meta.timestamp,
                // As Kafka's `UnifiedLog.append` answers a duplicate, whatever the topic's
                // timestamp type: the original batch's max timestamp (its append time on a
                // LogAppendTime topic), which the Java producer then reports as each record's.
                log_append_time: Some(meta.timestamp),
                log_start_offset: self.log_start_offset,
                record_count: 0,
                batch_count: 0,
                bytes: 0,
                duplicate: true,
            });
        }
        // As Kafka's `analyzeAndValidateProducerState`: an unverified transactional batch may
        // only continue a transaction open here at its own epoch (`hasOngoingTransaction`) —
        // one at a newer epoch belongs to a transaction the coordinator started after ending
        // the open one, so it would otherwise be taken into the old one. A stale epoch is still
        // `INVALID_PRODUCER_EPOCH`, checked first as there.
        if origin == LeaderOrigin::ClientUnverified
            && pre.transactional
            && pre.control.is_none()
            && pre.producer_id.is_some()
            && !self
                .producers
                .has_ongoing_transaction(pre.producer_id, pre.producer_epoch)
        {
            if let Err(e @ ProducerStateError::InvalidProducerEpoch { .. }) = pre_transition {
                return Err(e.into());
            }
            return Err(ProducerStateError::InvalidTxnState {
                producer_id: pre.producer_id,
                offset: self.log_end_offset(),
                reason: "a transactional batch that was not verified with the transaction \
                         coordinator (no transactional id) may only continue a transaction \
                         open at its epoch",
            }
            .into());
        }
        pre_transition?;
        // Assign offsets and stamp the broker-owned header fields in place.
        let base = self.log_end_offset();
        let (header_max_ts, header_type) = (batch.max_timestamp(), batch.timestamp_type());
        let mut buf = into_mut(batch.into_bytes());
        let log_append_time = {
            let mut h = BatchHeaderMut::new(&mut buf)?;
            h.set_base_offset(base);
            h.set_partition_leader_epoch(leader_epoch);
            if origin.is_client() && self.config.timestamp_type == TimestampType::LogAppendTime {
                h.set_max_timestamp(TimestampType::LogAppendTime, TimestampMs(now));
                Some(TimestampMs(now))
            } else {
                if let Some(max) = max_record_ts
                    && (header_max_ts != max || header_type == TimestampType::LogAppendTime)
                {
                    // A client's header disagreeing with its records (a forged maxTimestamp
                    // would hold off time retention and rolls), or flagged LogAppendTime on a
                    // CreateTime topic (Kafka clears the flag); a CRC pass only then.
                    h.set_max_timestamp(TimestampType::CreateTime, max);
                }
                None
            }
        };
        let batch = RecordBatch::new(buf.freeze())?;
        if batch.last_offset().relative_to(base).is_none()
            || batch.size_bytes() > self.config.segment.segment_bytes_max as usize
        {
            return Err(EngineError::RecordBatchTooLarge {
                size: batch.size_bytes(),
                segment_bytes: self.config.segment.segment_bytes_max,
            });
        }
        let info = BatchInfo::from_batch(&batch)?;
        let transition = self.producers.transition(&info, producer_origin)?;
        debug_assert_eq!(batch.validate(), Ok(()), "a stamped batch stays valid");
        // The epoch is recorded before the batch is written, as Kafka's `UnifiedLog.append` does
        // (see `assign_epoch_before_write`).
        self.assign_epoch_before_write(batch.partition_leader_epoch(), base)?;
        self.maybe_roll_at(
            now,
            batch.size_bytes() as u32,
            base,
            batch.last_offset(),
            batch.max_timestamp(),
        )?;
        let (last_offset, max_timestamp) = (batch.last_offset(), batch.max_timestamp());
        let (size, epoch) = (batch.size_bytes() as u64, batch.partition_leader_epoch());
        let count = batch.records_count().max(0) as u64;
        // The buffer goes to the segment whole: another handle on it would cost an allocation.
        self.active.append(batch.into_bytes())?;
        self.after_written(epoch, base, &info, transition)?;
        self.after_append()?;
        Ok(LogAppendInfo {
            first_offset: base,
            last_offset,
            max_timestamp,
            log_append_time,
            log_start_offset: self.log_start_offset,
            record_count: count,
            batch_count: 1,
            bytes: size,
            duplicate: false,
        })
    }

    /// The client checks Kafka's `UnifiedLog.analyzeAndValidateRecords` makes before the CRC
    /// pass, in its order, on the bytes of one batch as Kafka frames it (shorter than the v2
    /// header too, [`frames_as_one_batch`]): base offset 0 (`INVALID_RECORD`), then at most
    /// `max.message.bytes` (`MESSAGE_TOO_LARGE`). Made after the CRC, they answered
    /// `CORRUPT_MESSAGE` — retriable — for a batch that was also too large, which a producer
    /// resent unchanged rather than splitting it, and for one cut short of the v2 header.
    fn precheck_client_batch(&self, records: &[u8]) -> EngineResult<()> {
        let base = i64::from_be_bytes(
            records[field::BASE_OFFSET..field::BASE_OFFSET + 8]
                .try_into()
                .expect("8 bytes"),
        );
        if base != 0 {
            return Err(EngineError::InvalidRecord(format!(
                "a produced batch must have base offset 0, not {base}"
            )));
        }
        let max = self.config.max_message_bytes as usize;
        if records.len() > max {
            return Err(EngineError::RecordTooLarge {
                size: records.len(),
                max,
            });
        }
        Ok(())
    }

    /// The client-only checks of Kafka's `LogValidator`; the batch passed
    /// [`precheck_client_batch`](Self::precheck_client_batch). Records whose offset deltas are
    /// not 0, 1, 2, … are accepted, as Kafka accepts them (see [`ClientBatchCheck`]).
    fn validate_client_batch(
        &self,
        batch: &RecordBatch,
        now: i64,
    ) -> EngineResult<ClientBatchCheck> {
        let invalid = |s: &str| Err(EngineError::InvalidRecord(s.to_string()));
        if batch.is_control() {
            return invalid("clients may not write control batches");
        }
        let count = batch.records_count();
        if count <= 0 || batch.last_offset_delta() != count - 1 {
            return Err(EngineError::InvalidRecord(format!(
                "lastOffsetDelta {} does not match {count} records",
                batch.last_offset_delta()
            )));
        }
        if batch.producer_id().is_some() && batch.base_sequence().get() < 0 {
            return invalid("an idempotent batch must carry a base sequence");
        }
        let check_ts = self.config.timestamp_type == TimestampType::CreateTime;
        // A batch the producer flagged LogAppendTime: each of its records reads as the header's
        // max timestamp. Kafka's `validateTimestamp` checks that against the bounds on a
        // CreateTime topic (and the append clears the flag); on a LogAppendTime topic, or with
        // no max timestamp to check, it refuses every record.
        if batch.timestamp_type() == TimestampType::LogAppendTime
            && (!check_ts || batch.max_timestamp() == TimestampMs::NONE)
        {
            return Err(self.log_append_time_set(batch));
        }
        let mut max_ts = TimestampMs::NONE;
        // Offsets and timestamps only: no key, value or header slices (Kafka's
        // skipKeyValueIterator), and a compressed batch streamed through a small buffer rather
        // than decompressed whole, so a batch that inflates to hundreds of MiB holds little.
        // The first out-of-bounds record's reason, and every such record (Kafka checks them all).
        let mut first_bad: Option<(u32, i64, String)> = None;
        let mut invalid: Vec<OutOfRangeRecord> = vec![];
        let mut consecutive = true;
        let base = batch.base_offset();
        let mut i = 0usize;
        batch
            .record_metas()?
            .try_each(|r| {
                consecutive &= r.offset == base.plus(i as i64);
                // A record without a timestamp (−1) is not checked against the bounds (Kafka).
                if check_ts && r.timestamp != TimestampMs::NONE {
                    let ts = r.timestamp.get();
                    max_ts = max_ts.max(r.timestamp);
                    let broken = if now.saturating_sub(ts) > self.config.timestamp_before_max_ms {
                        Some(format!(
                            "more than message.timestamp.before.max.ms={} before the broker time {now}",
                            self.config.timestamp_before_max_ms
                        ))
                    } else if ts.saturating_sub(now) > self.config.timestamp_after_max_ms {
                        Some(format!(
                            "more than message.timestamp.after.max.ms={} after the broker time {now}",
                            self.config.timestamp_after_max_ms
                        ))
                    } else {
                        None
                    };
                    if let Some(reason) = broken {
                        invalid.push(OutOfRangeRecord {
                            index: i as u32,
                            offset_delta: r.offset.get().wrapping_sub(base.get()) as i32,
                            timestamp: ts,
                        });
                        first_bad.get_or_insert((i as u32, ts, reason));
                    }
                }
                i += 1;
                Ok(())
            })
            .map_err(client_batch_error)?;
        if let Some((record_index, timestamp, reason)) = first_bad {
            return Err(EngineError::InvalidTimestamp {
                record_index,
                timestamp,
                reason,
                invalid,
                valid_range: (
                    now.wrapping_sub(self.config.timestamp_before_max_ms),
                    now.wrapping_add(self.config.timestamp_after_max_ms),
                ),
            });
        }
        Ok(ClientBatchCheck {
            max_record_ts: check_ts.then_some(max_ts),
            consecutive,
        })
    }

    /// [`EngineError::LogAppendTimeSet`] for a client batch flagged LogAppendTime, every record
    /// named (a framing error first, as Kafka's record iterator throws it before the errors it
    /// collected). Only this refusal walks keys and values.
    fn log_append_time_set(&self, batch: &RecordBatch) -> EngineError {
        let source = match batch.compression() {
            Ok(c) => c,
            Err(e) => return e.into(),
        };
        let len = |b: &Option<Bytes>| b.as_ref().map_or(-1, |b| b.len() as i32);
        let walk = || -> EngineResult<Vec<FlaggedRecord>> {
            // Grown as records are read: the header's count is the client's word.
            let mut records = vec![];
            for r in batch.records()? {
                let r = r?;
                records.push(FlaggedRecord {
                    offset_delta: r.offset.get().wrapping_sub(batch.base_offset().get()) as i32,
                    key_bytes: len(&r.key),
                    value_bytes: len(&r.value),
                });
            }
            Ok(records)
        };
        match walk().map_err(client_batch_error) {
            Err(e) => e,
            Ok(records) => EngineError::LogAppendTimeSet {
                timestamp: batch.max_timestamp().get(),
                records,
                // Kafka's compressed path picks the skipping iterator when the topic keeps
                // the batch's codec (`sourceCompression == targetCompression`).
                partial: source != Compression::None
                    && self.config.compression.codec().is_none_or(|t| t == source),
            },
        }
    }

    /// Appends batches as a replica (follower or mirror); see the module docs. A partial batch at
    /// the end of `records` (a fetch response cut by its byte limit) is ignored, as Kafka's
    /// follower ignores it. Appends that do not fit the active segment roll it, as often as
    /// needed.
    ///
    /// # Errors
    /// `Corrupt` (bad CRC or framing: nothing is written), `UnexpectedAppendOffset` (first offset
    /// below the log end), `OffsetsOutOfOrder`, `RecordBatchTooLarge`, storage errors.
    pub fn append_as_follower(
        &mut self,
        records: Bytes,
        origin: ReplicaOrigin,
    ) -> EngineResult<LogAppendInfo> {
        self.check_writable()?;
        let producer_origin = match origin {
            ReplicaOrigin::Replication => AppendOrigin::Replication,
            ReplicaOrigin::Mirror => AppendOrigin::Mirror,
        };
        // Validate everything before writing anything.
        let leo = self.log_end_offset();
        let mut batches = vec![];
        let mut next = leo;
        let seg_max = self.config.segment.segment_bytes_max as usize;
        let mut it = Batches::new(records.clone()).legacy(true);
        for b in it.by_ref() {
            let b = b?;
            if batches.is_empty() && b.base_offset() < leo {
                return Err(EngineError::UnexpectedAppendOffset {
                    first_offset: b.base_offset(),
                    log_end_offset: leo,
                });
            }
            if b.base_offset() < next {
                return Err(EngineError::OffsetsOutOfOrder {
                    previous_last: Offset(next.get() - 1),
                    next: b.base_offset(),
                });
            }
            if b.size_bytes() > seg_max {
                return Err(EngineError::RecordBatchTooLarge {
                    size: b.size_bytes(),
                    segment_bytes: seg_max as u32,
                });
            }
            next = b.next_offset();
            // A legacy entry has no producer: Kafka's producer state skips magic < 2.
            let info = match b.is_legacy() {
                true => None,
                false => Some(BatchInfo::from_batch(&b)?),
            };
            batches.push((b, info));
        }
        if let Some(t) = it.truncated_tail() {
            tracing::debug!(log = %self.name, position = t.position, "ignoring a partial batch at the end of a replica append");
        }
        let Some((first, _)) = batches.first() else {
            return Ok(LogAppendInfo {
                first_offset: leo,
                last_offset: Offset(leo.get() - 1),
                max_timestamp: TimestampMs::NONE,
                log_append_time: None,
                log_start_offset: self.log_start_offset,
                record_count: 0,
                batch_count: 0,
                bytes: 0,
                duplicate: false,
            });
        };
        let first_offset = first.base_offset();
        // Write in runs that fit the active segment, rolling between them.
        let mut i = 0;
        let mut total_records = 0u64;
        let mut total_bytes = 0u64;
        let mut max_ts = TimestampMs::NONE;
        while i < batches.len() {
            let run_start = batches[i].0.position() as usize;
            // A run holds batches of one leader epoch, recorded before the run is written (see
            // `assign_epoch_before_write`).
            let run_epoch = batches[i].0.partition_leader_epoch();
            let run_legacy = batches[i].0.is_legacy();
            let roll_at = if run_legacy {
                self.clear_epochs_for_legacy(batches[i].0.magic())?;
                legacy_roll_offset(&batches[i].0, self.log_end_offset())
            } else {
                self.assign_epoch_before_write(run_epoch, batches[i].0.base_offset())?;
                batches[i].0.base_offset()
            };
            self.maybe_roll(
                batches[i].0.size_bytes() as u32,
                roll_at,
                batches[i].0.last_offset(),
                batches[i].0.max_timestamp(),
            )?;
            let mut j = i + 1;
            let mut run_bytes = batches[i].0.size_bytes() as u32;
            while j < batches.len() {
                let b = &batches[j].0;
                let fits = self
                    .active
                    .should_roll(
                        run_bytes + b.size_bytes() as u32,
                        b.last_offset(),
                        b.max_timestamp(),
                        self.clock.now_ms(),
                    )
                    .is_none();
                // Each batch may add an index entry: the run must fit the indexes too (an index
                // filling up half-way through an append would fail it after its bytes are in).
                if !fits
                    || j + 1 - i > self.active.index_room()
                    || b.partition_leader_epoch() != run_epoch
                    || b.is_legacy() != run_legacy
                {
                    break;
                }
                run_bytes += b.size_bytes() as u32;
                j += 1;
            }
            let run_end = run_start + run_bytes as usize;
            self.active.append(records.slice(run_start..run_end))?;
            for (b, info) in &batches[i..j] {
                // A compressed legacy wrapper's record count is unknown until decompressed: it
                // counts as one (Kafka's shallow count).
                total_records += match b.is_legacy() {
                    true => b.records_count().max(1),
                    false => b.records_count().max(0),
                } as u64;
                let Some(info) = info else { continue };
                let t = self
                    .producers
                    .transition(info, producer_origin)
                    .expect("replica transitions never fail");
                self.after_batch_written(b, info, t)?;
                max_ts = max_ts.max(b.max_timestamp());
            }
            total_bytes += run_bytes as u64;
            i = j;
        }
        let last_offset = batches.last().expect("non-empty").0.last_offset();
        self.after_append()?;
        Ok(LogAppendInfo {
            first_offset,
            last_offset,
            max_timestamp: max_ts,
            log_append_time: None,
            log_start_offset: self.log_start_offset,
            record_count: total_records,
            batch_count: batches.len() as u32,
            bytes: total_bytes,
            duplicate: false,
        })
    }

    /// Records in the epoch cache (and its checkpoint) that `epoch` starts at `base_offset` (the
    /// log end), before the batch at `base_offset` is written — Kafka's order in
    /// `UnifiedLog.append` (`maybeAssignEpochStartOffset`, then roll, then the segment append).
    ///
    /// The checkpoint write can fail, a full disk included. Done after the batch, such a failure
    /// left the batch in the segment (readable, counted in the log end) with its epoch missing
    /// from the cache and its producer state not updated (a retry was appended again), while a
    /// full disk keeps the data directory online. Done first, a failed write leaves the cache as
    /// it was and nothing of the append written; a failed write of the batch after it leaves an
    /// entry starting at the log end with no batch yet, the state a leader is in from its
    /// election until its first append (Kafka records the new epoch at the log end then), and
    /// the retry's assignment finds it in place.
    fn assign_epoch_before_write(
        &mut self,
        epoch: LeaderEpoch,
        base_offset: Offset,
    ) -> EngineResult<()> {
        if epoch.get() >= 0 {
            self.epochs.assign(epoch, base_offset)?;
        }
        Ok(())
    }

    /// Kafka's `UnifiedLog.append` before a legacy entry (magic 0 or 1, no leader epoch) is
    /// written: a non-empty epoch cache is cleared and its checkpoint written empty, so that a
    /// later election falls back to truncating by the high watermark ("a temporary regression to
    /// the message format" in a partial upgrade).
    fn clear_epochs_for_legacy(&mut self, magic: i8) -> EngineResult<()> {
        if !self.epochs.is_empty() {
            tracing::warn!(log = %self.name, "clearing the leader epoch cache after an append with message format v{magic}");
            self.epochs.clear()?;
        }
        Ok(())
    }

    /// Epoch cache, producer state and transaction index for a batch just written to the active
    /// segment (its epoch was assigned before the write, so the cache's assignment here changes
    /// nothing and writes nothing).
    fn after_batch_written(
        &mut self,
        batch: &RecordBatch,
        info: &BatchInfo,
        t: Transition,
    ) -> EngineResult<()> {
        self.after_written(batch.partition_leader_epoch(), batch.base_offset(), info, t)
    }

    /// [`after_batch_written`](Self::after_batch_written) given the batch's partition leader
    /// epoch and base offset.
    fn after_written(
        &mut self,
        epoch: LeaderEpoch,
        base_offset: Offset,
        info: &BatchInfo,
        t: Transition,
    ) -> EngineResult<()> {
        if epoch.get() >= 0 {
            self.epochs.assign(epoch, base_offset)?;
        }
        if let Some(c) = self.producers.commit(t, info.last_offset) {
            record_completed_txn(&mut self.producers, &mut self.active, &c)?;
        }
        Ok(())
    }

    /// Flush policy after an append: `flush.messages`, counted in offsets as Kafka's
    /// `unflushedMessages` (log end − recovery point), so an append counts the offsets it
    /// takes whatever its origin: gaps in a replica's batches and the records a legacy
    /// wrapper holds compressed count, as they do in Kafka.
    fn after_append(&mut self) -> EngineResult<()> {
        if self.unflushed_messages() >= self.config.flush_messages {
            self.flush()?;
        }
        Ok(())
    }

    /// Rolls to a new segment when the next append of `incoming` bytes would not fit the active
    /// one (size, time, full index, relative-offset overflow). The new segment starts at
    /// `first_offset`.
    fn maybe_roll(
        &mut self,
        incoming: u32,
        first_offset: Offset,
        max_offset: Offset,
        max_ts: TimestampMs,
    ) -> EngineResult<()> {
        let now = self.clock.now_ms();
        self.maybe_roll_at(now, incoming, first_offset, max_offset, max_ts)
    }

    /// [`maybe_roll`](Self::maybe_roll) at the broker time `now` the caller already read.
    fn maybe_roll_at(
        &mut self,
        now: i64,
        incoming: u32,
        first_offset: Offset,
        max_offset: Offset,
        max_ts: TimestampMs,
    ) -> EngineResult<()> {
        if let Some(reason) = self.active.should_roll(incoming, max_offset, max_ts, now) {
            tracing::debug!(log = %self.name, ?reason, at = %first_offset, "rolling segment");
            self.roll(first_offset)?;
        }
        Ok(())
    }

    /// Seals the active segment and starts a new one at `new_base` (≥ the log end). An empty
    /// active segment is replaced instead of sealed. Takes a producer snapshot at the roll point,
    /// as Kafka does.
    ///
    /// The old segment is sealed before it is swapped out: a sealing that fails (an index's
    /// sync, say) leaves it the active segment, poisoned, and fails the log
    /// ([`LogFailureListener`](super::LogFailureListener)), so that no bare log serves or takes
    /// appends after a segment it dropped.
    ///
    /// # Errors
    /// Storage failures; [`EngineError::LogDirOffline`] when the log failed before.
    pub fn roll(&mut self, new_base: Offset) -> EngineResult<()> {
        self.check_not_failed()?;
        // A poisoned active segment cannot be sealed: refuse before it is swapped out, or the
        // log would drop it from its segments and take appends into the new one.
        self.active.check_usable()?;
        let leo = self.log_end_offset();
        assert!(
            new_base >= leo,
            "{}: rolling to {new_base} below the log end {leo}",
            self.name
        );
        let now = self.clock.now_ms();
        if self.active.size_bytes() == 0 && self.active.base_offset() == new_base {
            return Ok(());
        }
        // The topic's current settings (an altered `segment.index.bytes` applies here) and,
        // as Kafka's roll, a jitter drawn for this segment alone.
        let seg_config = self.jitter.segment_config(&self.config);
        let fresh = mirrorlog_segment::segment::ActiveSegment::create(
            self.storage.clone(),
            &self.dir,
            new_base,
            seg_config,
            now,
        )?;
        if self.active.size_bytes() == 0 {
            std::mem::replace(&mut self.active, fresh).delete()?;
        } else {
            if let Err(e) = self.active.prepare_seal() {
                // The old segment stays (poisoned) where it was; the new one was never used.
                if let Err(d) = fresh.delete() {
                    tracing::warn!(log = %self.name, "removing the unused segment {new_base}: {d}");
                }
                let e = e.into();
                self.fail(&format!("sealing the segment before {new_base}"), &e);
                return Err(e);
            }
            let sealed = std::mem::replace(&mut self.active, fresh).into_sealed();
            self.sealed.insert(sealed.base_offset(), sealed);
        }
        // As Kafka's roll: the snapshot is named by the new segment's base, even above the log
        // end, so that it stays when retention deletes the segments below.
        self.producers.update_map_end_offset(new_base);
        self.producers.take_snapshot()?;
        // Everything before the new segment was flushed by seal().
        self.recovery_point = self.recovery_point.max(leo);
        Ok(())
    }
}

/// Where a run starting with the legacy entry `b` rolls to, given the log end: Kafka's
/// `maybeRoll` without a first offset (a compressed wrapper's header holds only its last):
/// `lastOffset - Integer.MAX_VALUE`, at or below the real first offset since one entry's offsets
/// span less than that, and never below the log end.
fn legacy_roll_offset(b: &RecordBatch, log_end_offset: Offset) -> Offset {
    Offset(b.last_offset().get() - i32::MAX as i64).max(log_end_offset)
}

/// What [`PartitionLog::validate_client_batch`] found of a client batch it accepts.
struct ClientBatchCheck {
    /// The largest record timestamp on a CreateTime topic (`None` on a LogAppendTime one,
    /// whose header the append stamps itself).
    max_record_ts: Option<TimestampMs>,
    /// Whether the records' offset deltas are 0, 1, 2, …: Kafka keeps other deltas of an
    /// uncompressed batch and rebuilds a compressed one with consecutive offsets (the
    /// historical handling of clients that set inner offsets wrongly, kept by
    /// `validateMessagesAndAssignOffsetsCompressed`).
    consecutive: bool,
}

/// A client batch that passed its CRC but whose count or records do not add up —
/// `recordsCount` or `lastOffsetDelta` out of range or disagreeing, more records than
/// `recordsCount` declares or fewer (a compressed batch of none among them), a record its bytes
/// do not hold — is `INVALID_RECORD`, as Kafka's `LogValidator.validateBatch` and its record
/// iterators ("Incorrect declared batch size, …") throw `InvalidRecordException`.
/// `CORRUPT_MESSAGE` stays for a batch that fails its CRC or framing; it is retriable, so a
/// producer answered it would resend the same bad batch until its delivery timeout.
fn client_batch_error(e: EngineError) -> EngineError {
    match e {
        EngineError::Corrupt(
            b @ (BatchError::CorruptRecord { .. }
            | BatchError::InvalidField {
                field: "recordsCount" | "lastOffsetDelta",
                ..
            }),
        ) => EngineError::InvalidRecord(b.to_string()),
        e => e,
    }
}

/// The one batch of a produce request's records, validated (CRC and header).
///
/// The usual request — exactly one whole batch — is wrapped as it is. Anything else goes through
/// [`Batches`] for the precise error; its handle on the buffer is dropped before returning, so
/// that the batch is the buffer's only owner and is stamped in place without a copy (and, for a
/// `Bytes` made from a `Vec`, a second handle would also cost an allocation).
fn single_batch(records: Bytes) -> EngineResult<RecordBatch> {
    if is_one_whole_batch(&records) {
        // Exactly what the iterator would check of this one batch.
        let batch = RecordBatch::new(records)?;
        batch.validate()?;
        return Ok(batch);
    }
    single_batch_by_iteration(records)
}

/// Whether `records` are exactly one whole v2 batch by its header's length (the only buffer
/// [`single_batch`] accepts; nothing else is checked).
fn is_one_whole_batch(records: &[u8]) -> bool {
    records.len() >= RECORD_BATCH_OVERHEAD && frames_as_one_batch(records)
}

/// Whether `records` are exactly one v2 batch as Kafka's batch iterator frames it: a length
/// field of at least `RECORD_OVERHEAD_V0` (14) that spans the buffer, and magic 2. Such a batch
/// may be shorter than the 61-byte v2 header: Kafka's `analyzeAndValidateRecords` still reads
/// its base offset before its CRC check (`isValid`, false for it) refuses it.
fn frames_as_one_batch(records: &[u8]) -> bool {
    records.len() >= LOG_OVERHEAD + RECORD_OVERHEAD_V0
        && records[field::MAGIC] as i8 == MAGIC_V2
        && i32::from_be_bytes(
            records[field::BATCH_LENGTH..field::BATCH_LENGTH + 4]
                .try_into()
                .expect("4 bytes"),
        ) as i64
            + LOG_OVERHEAD as i64
            == records.len() as i64
}

/// [`single_batch`] through [`Batches`], for any buffer: the precise error for a request that
/// is not exactly one whole batch.
fn single_batch_by_iteration(records: Bytes) -> EngineResult<RecordBatch> {
    let mut it = Batches::new(records);
    let batch = match it.next() {
        None => {
            return Err(EngineError::InvalidRecord(
                "the request holds no complete batch".into(),
            ));
        }
        Some(r) => r?,
    };
    if it.next().is_some() || it.truncated_tail().is_some() {
        return Err(EngineError::InvalidRecord(
            "a produce request must hold exactly one batch per partition".into(),
        ));
    }
    Ok(batch)
}

/// A unique buffer to stamp: the producer's own when nothing else holds it (no copy), else one
/// copy.
fn into_mut(b: Bytes) -> BytesMut {
    b.try_into_mut().unwrap_or_else(|b| BytesMut::from(&b[..]))
}

/// Re-encodes a client batch with `codec` as Kafka's `LogValidator.buildRecordsAndAssignOffsets`
/// does: producer fields, the transactional flag, keys, values and headers kept, the records at
/// consecutive offsets, each with its timestamp as read (a batch flagged LogAppendTime is
/// rebuilt CreateTime with each record at its max timestamp, as Kafka's builder of the topic's
/// CreateTime writes it).
fn recompress(batch: &RecordBatch, codec: Compression) -> EngineResult<RecordBatch> {
    let mut b = BatchBuilder::new()
        .compression(codec)
        .base_offset(batch.base_offset())
        .partition_leader_epoch(batch.partition_leader_epoch())
        .producer(
            batch.producer_id(),
            batch.producer_epoch(),
            batch.base_sequence(),
        )
        .transactional(batch.is_transactional());
    for r in batch.records()? {
        let r = r?;
        let headers: Vec<(&[u8], Option<&[u8]>)> = r
            .headers
            .iter()
            .map(|h| (&h.key[..], h.value.as_deref()))
            .collect();
        b.append(r.timestamp, r.key.as_deref(), r.value.as_deref(), &headers);
    }
    Ok(b.build())
}

#[cfg(test)]
mod tests {
    use super::*;
    use mirrorlog_segment::BatchBuilder;

    fn answer(r: EngineResult<RecordBatch>) -> String {
        match r {
            Ok(b) => format!("ok {:?}", &b.as_bytes()[..]),
            Err(e) => format!("err {e:?}"),
        }
    }

    #[test]
    fn single_batch_answers_every_framing_as_the_iterator_does() {
        let one = BatchBuilder::new()
            .record(TimestampMs(1), Some(b"k"), Some(b"v"))
            .record(TimestampMs(2), None, Some(b"w"))
            .build()
            .into_bytes();
        let two = [&one[..], &one[..]].concat();
        let with = |at: usize, byte: u8| {
            let mut b = one.to_vec();
            b[at] = byte;
            b
        };
        let mut cases: Vec<Vec<u8>> = vec![
            one.to_vec(),
            vec![],
            one[..16].to_vec(),
            one[..60].to_vec(),
            one[..one.len() - 1].to_vec(),
            [&one[..], &[0u8][..]].concat(),
            two.clone(),
            two[..two.len() - 5].to_vec(),
            with(field::MAGIC, 1),                 // wrong magic
            with(field::BATCH_LENGTH + 3, 10),     // batchLength below the header
            with(field::BATCH_LENGTH, 0x80),       // negative batchLength
            with(field::CRC, one[field::CRC] ^ 1), // CRC mismatch
            with(field::ATTRIBUTES, 0x80),         // attribute bit 15, the CRC not updated
            with(one.len() - 1, one[one.len() - 1] ^ 1),
        ];
        // A batchLength that claims the whole buffer of a shorter batch plus garbage.
        let mut longer = one.to_vec();
        longer.extend_from_slice(&[0; 8]);
        let len = (longer.len() - LOG_OVERHEAD) as i32;
        longer[field::BATCH_LENGTH..field::BATCH_LENGTH + 4].copy_from_slice(&len.to_be_bytes());
        cases.push(longer);
        for (i, case) in cases.into_iter().enumerate() {
            let b = Bytes::from(case);
            assert_eq!(
                answer(single_batch(b.clone())),
                answer(single_batch_by_iteration(b)),
                "case {i}"
            );
        }
    }

    #[test]
    fn single_batch_keeps_a_sole_owner_unique_for_stamping_in_place() {
        let one = BatchBuilder::new()
            .record(TimestampMs(1), Some(b"k"), Some(b"v"))
            .build()
            .into_bytes();
        let batch = single_batch(Bytes::from(one.to_vec())).unwrap();
        assert!(
            batch.into_bytes().try_into_mut().is_ok(),
            "no other handle on the buffer: stamped without a copy"
        );
    }
}
