//! Offsets (high watermark, log start), truncation, retention, flushing and closing.

use super::{FlushPoint, LogFailureListener, LogStartListener, PartitionLog, replay_segment};
use crate::config::LogConfig;
use crate::error::{EngineError, EngineResult};
use mirrorlog_index::{ErrorChain, LeaderEpoch, Offset};
use mirrorlog_segment::io::StorageFile;
use mirrorlog_segment::segment::{
    ActiveSegment, DeletedSegmentFiles, SegmentReader, SegmentResult,
};
use std::sync::Arc;

impl PartitionLog {
    /// Sets the high watermark, clamped to `[log start, log end]` (a follower takes its leader's;
    /// truncation may lower it). Returns the value set.
    pub fn update_high_watermark(&mut self, hw: Offset) -> Offset {
        let hw = hw.clamp(self.log_start_offset, self.log_end_offset());
        self.high_watermark = hw;
        self.producers.on_high_watermark_updated(hw);
        hw
    }

    /// Raises the high watermark to `hw` (clamped to the log end); never lowers it. Returns
    /// whether it moved.
    pub fn maybe_increment_high_watermark(&mut self, hw: Offset) -> bool {
        let hw = hw.min(self.log_end_offset());
        if hw > self.high_watermark {
            self.update_high_watermark(hw);
            true
        } else {
            false
        }
    }

    /// Raises the log start offset (DeleteRecords, a mirror following its source's log start):
    /// never above the high watermark, never down. The epoch cache and producer state are
    /// trimmed; segments wholly below the new log start stay until the next retention check
    /// ([`delete_old_segments`](Self::delete_old_segments)) deletes them, as Kafka's
    /// `maybeIncrementLogStartOffset` leaves them to `deleteLogStartOffsetBreachedSegments`.
    /// Until then nothing below the log start is served: reads below it are out of range,
    /// ListOffsets looks at the segments from the one holding it, and a reopen takes the log
    /// start from the log manager's checkpoint. Returns whether it moved.
    ///
    /// A storage failure (writing the epoch checkpoint) leaves the log start moved in memory
    /// (the epoch cache and producer state trimmed to it too), and one that leaves the file in
    /// an unknown state (anything but running out of space, whose stale entries below the log
    /// start the next open trims) fails the log ([`LogFailureListener`]).
    ///
    /// # Errors
    /// [`EngineError::OffsetOutOfRange`] when `new_start` is above the high watermark; storage
    /// failures; [`EngineError::LogDirOffline`] when the log failed before;
    /// [`EngineError::PartitionDeleted`] once the log was deleted.
    pub fn maybe_increment_log_start_offset(&mut self, new_start: Offset) -> EngineResult<bool> {
        self.check_writable()?;
        if new_start > self.high_watermark {
            return Err(EngineError::OffsetOutOfRange {
                requested: new_start,
                log_start: self.log_start_offset,
                log_end: self.high_watermark,
            });
        }
        if new_start <= self.log_start_offset {
            return Ok(false);
        }
        if let Err(e) = self.set_log_start(new_start) {
            if crate::manager::takes_dir_offline(&e) {
                self.fail(&format!("moving the log start to {new_start}"), &e);
            }
            return Err(e);
        }
        Ok(true)
    }

    /// Moves the log start up to `new_start`, in memory whatever the epoch checkpoint's write
    /// does (its error is returned after).
    fn set_log_start(&mut self, new_start: Offset) -> EngineResult<()> {
        self.log_start_offset = new_start;
        let trimmed = self.epochs.truncate_from_start(new_start);
        self.producers.on_log_start_offset_incremented(new_start);
        Ok(trimmed?)
    }

    fn delete_segments_below_log_start(&mut self) -> EngineResult<usize> {
        let mut deleted = 0;
        loop {
            let mut it = self.sealed.keys();
            let Some(&first) = it.next() else { break };
            let next_base = it.next().copied().unwrap_or(self.active.base_offset());
            if next_base > self.log_start_offset {
                break;
            }
            let renamed = self
                .sealed
                .remove(&first)
                .expect("present")
                .rename_deleted();
            self.defer_removal(renamed)?;
            deleted += 1;
        }
        if deleted > 0 {
            self.defer_snapshot_removal()?;
        }
        Ok(deleted)
    }

    /// Retention: deletes the oldest segments that are wholly below the log start, older than
    /// `retention.ms` (by their largest timestamp), or beyond `retention.bytes`; only segments
    /// below the high watermark go. When every segment goes, the active one included (not
    /// empty, the high watermark at the log end), it is rolled first, as Kafka's
    /// `deleteSegments` does, so that a partition no longer written to still expires its
    /// records. The log start moves to the first remaining segment. With the empty `cleanup.policy`
    /// ([`CleanupPolicy::Retain`](crate::config::CleanupPolicy::Retain)) only segments below the
    /// log start go. Returns how many segments were deleted.
    ///
    /// A segment is unlisted before its files go, and the log start follows it at once, so a
    /// storage failure part-way leaves the log consistent in memory: no segment listed whose
    /// deletion began, and the log start at the first one still listed (or above it, where it
    /// was). One that leaves a file in an unknown state (anything but running out of space
    /// writing the epoch checkpoint) fails the log ([`LogFailureListener`]), as a failed
    /// truncation does.
    ///
    /// # Errors
    /// Storage failures; [`EngineError::LogDirOffline`] when the log failed before;
    /// [`EngineError::PartitionDeleted`] once the log was deleted.
    pub fn delete_old_segments(&mut self) -> EngineResult<usize> {
        self.check_writable()?;
        let r = self.delete_old_segments_inner();
        if let Err(e) = &r
            && crate::manager::takes_dir_offline(e)
        {
            self.fail("deleting segments by retention", e);
        }
        r
    }

    fn delete_old_segments_inner(&mut self) -> EngineResult<usize> {
        let mut deleted = self.delete_segments_below_log_start()?;
        if self.config.cleanup_policy == crate::config::CleanupPolicy::Retain {
            // Kafka 4.2's empty `cleanup.policy`: infinite retention, only DeleteRecords trims.
            return Ok(deleted);
        }
        let now = self.clock.now_ms();
        // Bytes above `retention.bytes` (none when unlimited: −1).
        let mut excess = (self.config.retention_bytes >= 0)
            .then(|| self.size_bytes() as i64 - self.config.retention_bytes);
        loop {
            let mut it = self.sealed.iter();
            let Some((&first, seg)) = it.next() else {
                // Only the active segment is left: Kafka's `deletableSegments` takes it too when
                // it is not empty and the high watermark is at the log end, and `deleteSegments`
                // rolls before deleting every segment. Rolled, it is the sealed one the next
                // round looks at again.
                let leo = self.log_end_offset();
                if self.active.size_bytes() > 0
                    && self.high_watermark >= leo
                    && self.breaches_retention(&self.active, now, excess)?
                {
                    self.roll(leo)?;
                    continue;
                }
                break;
            };
            let next_base = it
                .next()
                .map(|(b, _)| *b)
                .unwrap_or(self.active.base_offset());
            if next_base > self.high_watermark || !self.breaches_retention(seg, now, excess)? {
                break;
            }
            if let Some(x) = &mut excess {
                *x -= seg.size_bytes() as i64;
            }
            // Unlisted first, and the log start moved past it whatever its deletion does: a
            // segment whose files may be half gone is never served again.
            let renamed = self
                .sealed
                .remove(&first)
                .expect("present")
                .rename_deleted();
            let removed = self.defer_removal(renamed);
            deleted += 1;
            let moved = if next_base > self.log_start_offset {
                self.set_log_start(next_base)
            } else {
                Ok(())
            };
            removed?;
            moved?;
        }
        if deleted > 0 {
            self.defer_snapshot_removal()?;
            tracing::info!(log = %self.name, deleted, log_start = %self.log_start_offset, "retention deleted segments");
        }
        Ok(deleted)
    }

    /// Whether `seg` goes by `retention.ms` (Kafka's `deleteRetentionMsBreachedSegments`) or
    /// fits in the `excess` bytes above `retention.bytes` (`deleteRetentionSizeBreachedSegments`).
    fn breaches_retention(
        &self,
        seg: &SegmentReader,
        now: i64,
        excess: Option<i64>,
    ) -> EngineResult<bool> {
        if excess.is_some_and(|x| x >= seg.size_bytes() as i64) {
            return Ok(true);
        }
        if self.config.retention_ms < 0 {
            return Ok(false);
        }
        // Kafka's `LogSegment.largestTimestamp`: the largest record timestamp, or the `.log`
        // file's last-modified time when no record has one (−1). A segment whose age cannot be
        // told is kept.
        let largest = match seg.largest_timestamp()?.get() {
            ts if ts >= 0 => Some(ts),
            _ => last_modified_ms(seg.log_path()),
        };
        Ok(largest.is_some_and(|ts| now.saturating_sub(ts) > self.config.retention_ms))
    }

    /// Kafka's `truncateTo`: removes everything at and after `target` (batch-granular: a batch
    /// holding `target` goes whole), trims the epoch cache, rebuilds producer state from the
    /// newest snapshot at or below the point plus replay, and lowers the high watermark and
    /// recovery point to the new end. A target below the first segment truncates fully. Returns
    /// whether anything was removed.
    ///
    /// A new end below the log start lowers the log start to it, and the log's
    /// [`LogStartListener`] (the log manager's, which makes the value durable in its log-start
    /// checkpoint) is told before this returns; a bare log without a listener only lowers it in
    /// memory, and its embedder must persist it before appending.
    ///
    /// A storage failure once records may have been removed (out of space included) fails the
    /// log ([`LogFailureListener`]: it refuses all use, and the log manager takes its data
    /// directory offline, as Kafka does for an `IOException` in a truncation): the log's files
    /// are then in an unknown state. Its offsets in memory never claim anything at or past
    /// `target` all the same: the log start, high watermark and recovery point are lowered to
    /// at most `target` and the log end, and the epoch cache loses its entries from there on
    /// even when its checkpoint cannot be written.
    ///
    /// # Errors
    /// Storage failures, or the listener's; [`EngineError::LogDirOffline`] when the log failed
    /// before.
    pub fn truncate_to(&mut self, target: Offset) -> EngineResult<bool> {
        self.check_writable()?;
        assert!(
            target.get() >= 0,
            "{}: truncating to negative offset {target}",
            self.name
        );
        let leo = self.log_end_offset();
        if target >= leo {
            // Nothing to remove but an epoch entry starting at the log end (an epoch assigned
            // with nothing written in it yet), in memory even when its write fails.
            if let Err(e) = self.epochs.truncate_from_end(leo) {
                let e = e.into();
                self.fail(&format!("trimming the epoch cache to {leo}"), &e);
                return Err(e);
            }
            return Ok(false);
        }
        // The partition's leader epoch is the controller's, not the data's: trimming the cache
        // must not lower it (consumers holding it would be told it is unknown).
        let epoch = self.leader_epoch();
        self.raise_leader_epoch(epoch);
        self.truncations += 1;
        let first_base = self.segments().next().expect("active").base_offset();
        if target < first_base {
            self.truncate_fully_and_start_at(target)?;
            return Ok(true);
        }
        let removed = self.remove_records_from(target);
        // From here on nothing at or past `target` is claimed, whatever the removal managed.
        let end = self.log_end_offset().min(target);
        let lowered = end < self.log_start_offset;
        self.log_start_offset = self.log_start_offset.min(end);
        self.high_watermark = self.high_watermark.min(end);
        self.recovery_point = self.recovery_point.min(end);
        let trimmed = self
            .epochs
            .truncate_from_end(end)
            .map_err(EngineError::from);
        let rebuilt = match (&removed, &trimmed) {
            (Ok(()), Ok(())) => self.rebuild_producer_state(end),
            // The log fails below; its producer state is not served any more.
            _ => Ok(()),
        };
        self.producers
            .on_high_watermark_updated(self.high_watermark);
        if let Err(e) = removed.and(trimmed).and(rebuilt) {
            self.fail(&format!("truncating to {target}"), &e);
            return Err(e);
        }
        if lowered {
            // Told once the log is consistent again: the listener failing leaves it truncated,
            // its new log start not durable, so the log fails (and the log manager's listener
            // has taken the data dir offline).
            if let Err(e) = self.notify_log_start_lowered(end) {
                self.fail(&format!("recording the log start {end}"), &e);
                return Err(e);
            }
        }
        Ok(true)
    }

    /// The removal part of [`truncate_to`](Self::truncate_to) for a `target` at or above the
    /// first segment's base offset: the segments after the one holding `target` go, that one
    /// becomes the active segment and is cut at `target`.
    fn remove_records_from(&mut self, target: Offset) -> EngineResult<()> {
        let now = self.clock.now_ms();
        if target < self.active.base_offset() {
            // The segment holding `target` becomes the active one; everything after it goes.
            let holder = *self
                .sealed
                .range(..=target)
                .next_back()
                .expect("a segment at or below target")
                .0;
            let later: Vec<Offset> = self
                .sealed
                .range(holder..)
                .skip(1)
                .map(|(b, _)| *b)
                .collect();
            for &b in &later {
                let renamed = self.sealed.remove(&b).expect("present").rename_deleted();
                self.defer_removal(renamed)?;
            }
            let seg = self.sealed.remove(&holder).expect("present");
            let reopened = seg.reopen_active()?;
            let old = std::mem::replace(&mut self.active, reopened);
            let old_base = old.base_offset();
            self.defer_removal(old.rename_deleted())?;
            // As Kafka's `truncateTo`: the deleted segments' snapshots go as their files do
            // (the others above the new end the producer-state rebuild removes at once).
            self.defer_snapshot_removal_of(|o| o == old_base || later.contains(&o))?;
        }
        self.active.truncate_to(target, now)?;
        Ok(())
    }

    /// Installs (or removes) the [`LogStartListener`] told whenever the log start goes down.
    /// The log manager installs one on every log it holds.
    pub fn set_log_start_listener(&mut self, listener: Option<Arc<dyn LogStartListener>>) {
        self.log_start_listener = listener;
    }

    /// Installs (or removes) the [`LogFailureListener`] told when the log fails. The log manager
    /// installs one on every log it holds.
    pub fn set_failure_listener(&mut self, listener: Option<Arc<dyn LogFailureListener>>) {
        self.failure_listener = listener;
    }

    /// Why the log refuses all use, if it failed (see [`LogFailureListener`]). Set once, never
    /// cleared: a reopen recovers the log from its files.
    pub fn failure(&self) -> Option<&str> {
        self.failed.as_deref()
    }

    /// Fails the log: `what` was left part-way by `e`. The first reason is kept; the listener is
    /// told every time (it keeps the first too).
    pub(super) fn fail(&mut self, what: &str, e: &EngineError) {
        let reason = format!("{}: {what} failed: {}", self.name, ErrorChain(e));
        if self.failed.is_none() {
            tracing::error!(log = %self.name, "log failed, refusing all use until reopened: {reason}");
            self.failed = Some(reason.clone());
        }
        if let Some(l) = &self.failure_listener {
            l.log_failed(&reason);
        }
    }

    fn notify_log_start_lowered(&self, new_start: Offset) -> EngineResult<()> {
        match &self.log_start_listener {
            Some(l) => l.log_start_lowered(new_start),
            None => Ok(()),
        }
    }

    /// Reloads producer state to `end` from the newest usable snapshot and the log.
    fn rebuild_producer_state(&mut self, end: Offset) -> EngineResult<()> {
        let now = self.clock.now_ms();
        let from = self
            .producers
            .truncate_and_reload(self.log_start_offset, end, now)?;
        let PartitionLog {
            sealed,
            active,
            producers,
            ..
        } = self;
        for s in sealed
            .values()
            .map(|s| &**s)
            .chain(std::iter::once(&**active))
        {
            replay_segment(producers, s, from, end)?;
        }
        Ok(())
    }

    /// Kafka's `truncateFullyAndStartAt`: deletes every segment and starts empty at `new_offset`
    /// (which becomes the log start, high watermark and recovery point); the epoch cache and
    /// producer state are cleared, the leader epoch ([`PartitionLog::leader_epoch`]) is kept.
    ///
    /// When `new_offset` is below the log start, the log's [`LogStartListener`] (the log
    /// manager's, which makes the value durable in its log-start checkpoint) is told before any
    /// segment goes, so a crash at any point after can never restart the log above
    /// `new_offset`; a bare log without a listener only lowers it in memory, and its embedder
    /// must persist it before appending.
    ///
    /// Any failure fails the log ([`LogFailureListener`]), as in
    /// [`truncate_to`](Self::truncate_to); the epoch cache and producer state are cleared in
    /// memory all the same, and the log start, high watermark and recovery point lowered to at
    /// most `new_offset` and the log end.
    ///
    /// # Errors
    /// Storage failures, or the listener's (nothing is truncated then);
    /// [`EngineError::LogDirOffline`] when the log failed before.
    pub fn truncate_fully_and_start_at(&mut self, new_offset: Offset) -> EngineResult<()> {
        self.check_writable()?;
        assert!(
            new_offset.get() >= 0,
            "{}: starting at negative offset {new_offset}",
            self.name
        );
        if new_offset < self.log_start_offset
            && let Err(e) = self.notify_log_start_lowered(new_offset)
        {
            self.fail(&format!("recording the log start {new_offset}"), &e);
            return Err(e);
        }
        let epoch = self.leader_epoch();
        self.raise_leader_epoch(epoch);
        self.truncations += 1;
        let removed = self.remove_all_records_and_start_at(new_offset);
        let cleared = self.epochs.clear().map_err(EngineError::from);
        let reset = self
            .producers
            .truncate_fully_and_start_at(new_offset)
            .map_err(EngineError::from);
        if removed.is_ok() {
            self.log_start_offset = new_offset;
            self.high_watermark = new_offset;
            self.recovery_point = new_offset;
        } else {
            let end = self.log_end_offset().min(new_offset);
            self.log_start_offset = self.log_start_offset.min(end);
            self.high_watermark = self.high_watermark.min(end);
            self.recovery_point = self.recovery_point.min(end);
        }
        self.producers
            .on_high_watermark_updated(self.high_watermark);
        if let Err(e) = removed.and(cleared).and(reset) {
            self.fail(&format!("truncating fully to start at {new_offset}"), &e);
            return Err(e);
        }
        Ok(())
    }

    /// The removal part of [`truncate_fully_and_start_at`](Self::truncate_fully_and_start_at):
    /// every segment goes, an empty active one starts at `new_offset`.
    fn remove_all_records_and_start_at(&mut self, new_offset: Offset) -> EngineResult<()> {
        let now = self.clock.now_ms();
        // A new segment (Kafka's `truncateFullyAndStartAt` creates one), with its own jitter.
        let seg_config = self.jitter.segment_config(&self.config);
        for (_, s) in std::mem::take(&mut self.sealed) {
            self.defer_removal(s.rename_deleted())?;
        }
        if self.active.base_offset() == new_offset {
            // Same name: emptying it in place is the same as a new segment (its jitter too).
            self.active.truncate_to(new_offset, now)?;
            self.active.update_config(&seg_config);
        } else {
            let fresh = ActiveSegment::create(
                self.storage.clone(),
                &self.dir,
                new_offset,
                seg_config,
                now,
            )?;
            let old = std::mem::replace(&mut self.active, fresh);
            self.defer_removal(old.rename_deleted())?;
        }
        Ok(())
    }

    /// Kafka's `LocalLog.deleteSegmentFiles` with `asyncDelete`: a deleted segment's files,
    /// just renamed `.deleted` (durably), are removed once `file.delete.delay.ms` has passed
    /// ([`remove_deleted_files`](Self::remove_deleted_files)), at once when it is 0. Until
    /// then they are visible in the directory as Kafka's are, and reading a `.log` some fetch
    /// still has open never depended on them: an open file outlives its name.
    fn defer_removal(&mut self, renamed: SegmentResult<DeletedSegmentFiles>) -> EngineResult<()> {
        self.schedule_removal(DeletedFiles::Segment(renamed?))
    }

    /// Kafka's `deleteProducerSnapshots` with `asyncDelete`, after retention deleted segments:
    /// the producer snapshots below the first remaining segment are renamed `.deleted` and
    /// removed with the segments' files, once `file.delete.delay.ms` has passed.
    fn defer_snapshot_removal(&mut self) -> EngineResult<()> {
        let first = self.segments().next().expect("active").base_offset();
        self.defer_snapshot_removal_of(|o| o < first)
    }

    /// As [`defer_snapshot_removal`](Self::defer_snapshot_removal), for the snapshots `which`
    /// picks.
    fn defer_snapshot_removal_of(&mut self, which: impl Fn(Offset) -> bool) -> EngineResult<()> {
        let renamed = self.producers.mark_snapshots_deleted(which)?;
        if renamed.is_empty() {
            return Ok(());
        }
        self.schedule_removal(DeletedFiles::Snapshots(renamed))
    }

    fn schedule_removal(&mut self, files: DeletedFiles) -> EngineResult<()> {
        if self.config.file_delete_delay_ms == 0 {
            return files.remove(&*self.storage);
        }
        let now = self.clock.now_ms();
        self.deleted_files
            .schedule(now, self.config.file_delete_delay_ms, files);
        Ok(())
    }

    /// Removes the files of deleted segments, and deleted producer snapshots, whose
    /// `file.delete.delay.ms` has passed (Kafka's scheduled `delete-file` and
    /// `delete-producer-snapshot` tasks); the log manager's upkeep calls it. Returns how many
    /// segments' files (or sets of snapshots) went.
    ///
    /// # Errors
    /// A removal failed (Kafka takes the directory offline then); those files and the ones not
    /// yet tried stay listed.
    pub fn remove_deleted_files(&mut self) -> EngineResult<usize> {
        let now = self.clock.now_ms();
        let storage = &*self.storage;
        self.deleted_files
            .remove_due(now, |files| files.remove(storage))
    }

    /// Makes everything appended durable (`fdatasync` of the active segment's `.log`; sealed
    /// segments were synced, indexes included, when sealed) and moves the recovery point to the
    /// log end.
    ///
    /// The active segment's indexes are not synced here (Kafka's `LogSegment.flush` msyncs them
    /// too): after a crash the reopen scans the active segment whatever the recovery point says
    /// (it always holds or follows the recovery point) and rebuilds its indexes from the `.log`,
    /// so their durability buys nothing, while it cost three more syncs per flush. A clean
    /// [`close`](Self::close), whose marker makes the reopen trust the indexes, syncs them.
    ///
    /// # Errors
    /// Storage failures; after a failed sync the active segment refuses writes until the log is
    /// reopened and recovered.
    pub fn flush(&mut self) -> EngineResult<()> {
        self.active.sync_log()?;
        self.recovery_point = self.log_end_offset();
        self.last_flush_ms = self.clock.now_ms();
        Ok(())
    }

    /// Fails once a storage failure poisoned the log: its active segment (a failed write or
    /// sync, a failed transaction-index entry: no append, flush or roll) or the log itself (a
    /// truncation or log-start move that failed part-way: no use at all). It must then be
    /// reopened, which recovers it.
    ///
    /// # Errors
    /// The log's failure ([`EngineError::LogDirOffline`]) or the active segment's first one.
    pub fn check_usable(&self) -> EngineResult<()> {
        self.check_not_failed()?;
        Ok(self.active.check_usable()?)
    }

    /// Flushes when `flush.ms` has passed since the last flush. Returns whether it flushed.
    ///
    /// # Errors
    /// As [`flush`](Self::flush).
    pub fn maybe_flush_by_time(&mut self) -> EngineResult<bool> {
        let now = self.clock.now_ms();
        if self.unflushed_messages() > 0
            && now.saturating_sub(self.last_flush_ms) >= self.config.flush_ms
        {
            self.flush()?;
            return Ok(true);
        }
        Ok(false)
    }

    /// The active segment's `.log` file, for a group commit to sync outside the log's lock.
    pub fn active_log_file(&self) -> Arc<dyn StorageFile> {
        self.active.log_file().clone()
    }

    /// How many truncations this log has seen since it was opened (in memory). A caller that
    /// notes it after an append and finds it changed later knows the append may be gone.
    pub fn truncations(&self) -> u64 {
        self.truncations
    }

    /// What a sync of the active `.log` started after this call covers, up to `offset` (at most
    /// the log end): the position plus the log's truncation count, for
    /// [`mark_flushed`](Self::mark_flushed) once that sync returns.
    pub fn flush_point(&self, offset: Offset) -> FlushPoint {
        FlushPoint {
            offset: offset.min(self.log_end_offset()),
            truncations: self.truncations,
        }
    }

    /// Records that everything below `point` was made durable by a sync done elsewhere (group
    /// commit) that started after `point` was taken. A truncation since then voids the point:
    /// the bytes below it may have been rewritten after that sync started, so the recovery point
    /// stays where the truncation left it (conservative: a crash then scans more of the log).
    pub fn mark_flushed(&mut self, point: FlushPoint) {
        if point.truncations != self.truncations {
            return;
        }
        if point.offset <= self.log_end_offset() && point.offset > self.recovery_point {
            self.recovery_point = point.offset;
        }
    }

    /// Records a new leader epoch starting at the log end (on becoming leader, or a mirror's
    /// epoch bump). Returns whether the cache changed.
    ///
    /// # Errors
    /// Writing the checkpoint failed.
    pub fn assign_leader_epoch(&mut self, epoch: LeaderEpoch) -> EngineResult<bool> {
        let leo = self.log_end_offset();
        Ok(self.epochs.assign(epoch, leo)?)
    }

    /// Replaces the topic configuration (IncrementalAlterConfigs, a mirror's config sync, the
    /// read-only flag). Segment sizes apply from the next roll.
    ///
    /// # Errors
    /// [`EngineError::Config`] for an invalid configuration.
    pub fn update_config(&mut self, config: LogConfig) -> EngineResult<()> {
        config.validate()?;
        self.config = config;
        // The active segment rolls by the new limits from now on (Kafka's roll decision reads
        // the log's config), and the next segment is created with all of them. Its jitter was
        // drawn when it was created and stays (Kafka's `rollJitterMs` is fixed per segment),
        // only kept below a `segment.ms` that went below it.
        let mut seg_config = self.config.segment;
        seg_config.roll_jitter_ms =
            (self.active.config().roll_jitter_ms).min(seg_config.segment_ms - 1);
        self.active.update_config(&seg_config);
        Ok(())
    }

    /// Marks the log deleted (the log manager is removing its directory): appends and
    /// truncations fail with [`EngineError::PartitionDeleted`] from now on.
    pub fn mark_deleted(&mut self) {
        self.deleted = true;
    }

    /// Whether the log manager deleted the log ([`mark_deleted`](Self::mark_deleted)).
    pub fn is_deleted(&self) -> bool {
        self.deleted
    }

    /// Refuses a write to a deleted or failed log.
    pub(super) fn check_writable(&self) -> EngineResult<()> {
        if self.deleted {
            return Err(EngineError::PartitionDeleted(self.name.clone()));
        }
        self.check_not_failed()
    }

    /// Refuses any use of a failed log: [`EngineError::LogDirOffline`] naming its data
    /// directory, as a log in a directory the log manager took offline answers.
    pub(super) fn check_not_failed(&self) -> EngineResult<()> {
        match &self.failed {
            None => Ok(()),
            Some(reason) => Err(EngineError::LogDirOffline {
                path: self.dir.parent().unwrap_or(&self.dir).to_path_buf(),
                reason: reason.clone(),
            }),
        }
    }

    /// Marks the partition read-only (a mirror topic) or writable.
    pub fn set_read_only(&mut self, read_only: bool) {
        self.config.read_only = read_only;
    }

    /// Removes idle producers (`producer.id.expiration.ms`).
    pub fn remove_expired_producers(&mut self) -> usize {
        let now = self.clock.now_ms();
        self.producers.remove_expired_producers(now)
    }

    /// Clean close: flush, write a producer snapshot at the log end. A log closed this way
    /// reopens with [`Shutdown::Clean`](super::Shutdown::Clean) without a scan.
    ///
    /// # Errors
    /// Storage failures.
    pub fn close(mut self) -> EngineResult<()> {
        self.flush()?;
        // The active segment's files end as Kafka's `LogSegment.close` leaves them, since the
        // clean-shutdown marker makes the reopen (ours or Kafka's) trust them: the largest
        // timestamp appended to the time index and both indexes trimmed to their entries (Kafka
        // counts a file's length over the entry size as its entries), everything synced, and
        // the zeros of a preallocated direct-I/O `.log` cut. The segment takes no more appends.
        self.active.prepare_seal()?;
        self.producers.take_snapshot()?;
        Ok(())
    }
}

/// The file's last-modified time in ms since the epoch, if the file system tells it.
fn last_modified_ms(path: &std::path::Path) -> Option<i64> {
    let modified = std::fs::metadata(path).ok()?.modified().ok()?;
    let since = modified.duration_since(std::time::UNIX_EPOCH).ok()?;
    i64::try_from(since.as_millis()).ok()
}

/// What a deletion renamed `.deleted` and [`PartitionLog::remove_deleted_files`] removes.
#[derive(Debug)]
pub(super) enum DeletedFiles {
    /// A deleted segment's files.
    Segment(DeletedSegmentFiles),
    /// Producer snapshots below the first segment left, after segments were deleted.
    Snapshots(Vec<std::path::PathBuf>),
}

impl DeletedFiles {
    /// Removes the files; one already gone is no error.
    fn remove(&self, storage: &dyn mirrorlog_segment::io::Storage) -> EngineResult<()> {
        match self {
            DeletedFiles::Segment(files) => Ok(files.remove(storage)?),
            DeletedFiles::Snapshots(paths) => {
                for p in paths {
                    match storage.remove(p) {
                        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                            return Err(mirrorlog_index::Error::Io {
                                op: "remove deleted snapshot",
                                path: e.path,
                                source: e.source,
                            }
                            .into());
                        }
                        _ => {}
                    }
                }
                Ok(())
            }
        }
    }
}
