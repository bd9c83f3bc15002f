//! The leader-epoch cache (Kafka's `LeaderEpochFileCache`) and the rule a follower uses to find
//! where its log diverges from its leader's (Kafka's `AbstractFetcherThread.
//! getOffsetTruncationState`).
//!
//! The cache maps every leader epoch present in a partition's log to the first offset written in
//! it, and is kept in `leader-epoch-checkpoint` beside the segments (text format in
//! `index/FORMAT.md` §5). It answers `OffsetsForLeaderEpoch` ([`LeaderEpochCache::end_offset_for`]),
//! which is how a follower — or a KIP-1279 mirror acting as a follower of its source — finds the
//! last offset its log shares with the leader's.
//!
//! Every change is written to the checkpoint before it is visible in memory, synchronously. Kafka
//! flushes truncations asynchronously and lets recovery truncate the stale entries again after a
//! crash; epoch changes and truncations are rare, so writing through costs little and a crash
//! never leaves the file ahead of or behind what was acknowledged. When the write of a new entry
//! fails the cache is left as it was and the error is returned (the file then holds the old or
//! the new entries; the caller should treat the log directory as failed, as Kafka does). A
//! removal (a truncation at either end, a clear) is the exception: it is applied in memory even
//! when its write fails, as Kafka's `LeaderEpochFileCache` removes before it writes, because the
//! entries it removes describe records the log no longer has, and answering from them would
//! point past the log end (`OffsetForLeaderEpoch`, a follower's divergence check). The file then
//! holds a superset of the cache — entries past the log end or below the log start — which the
//! log's open trims again. The file is written,
//! read and replaced through the log's `Storage` (`.tmp` written and synced, renamed over the
//! file, the partition directory synced, as Kafka's `CheckpointFile`), so its durability is the
//! storage's; a deleted partition's file goes with the storage's files of its directory.
//!
//! Invariant (DESIGN.md §3, invariant 9): epochs and start offsets both strictly increase from
//! one entry to the next. Every change asserts it where the new entry meets the old ones (in
//! release builds too; the whole-list check is a `debug_assert!`), and [`LeaderEpochCache::open`]
//! restores it as Kafka's constructor does, assigning a file's entries one by one.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use mirrorlog_index::checkpoint::{
    CHECKPOINT_VERSION, LEADER_EPOCH_CHECKPOINT_FILE, decode_checkpoint, encode_checkpoint,
};
use mirrorlog_index::{EpochEntry, Error, ErrorChain, LeaderEpoch, Offset};
use mirrorlog_segment::io::{OpenMode, PwriteStorage, Storage};

use crate::checkpoint_io::{index_io, read_if_exists, replace_durably};

/// A partition's leader epochs and the offset each one starts at, sorted by epoch (and so by
/// start offset), optionally backed by its `leader-epoch-checkpoint` file.
///
/// Kafka's `LeaderEpochFileCache`, with the same answers for every query. The single writer is
/// `&mut self`; the log owns its cache.
#[derive(Debug)]
pub struct LeaderEpochCache {
    /// Strictly increasing in both epoch and start offset.
    entries: Vec<EpochEntry>,
    /// Where every change is persisted; `None` for [`LeaderEpochCache::in_memory`].
    checkpoint: Option<EpochCheckpoint>,
}

/// The `leader-epoch-checkpoint` file behind a cache, kept through the log's storage.
#[derive(Debug)]
struct EpochCheckpoint {
    storage: Arc<dyn Storage>,
    path: PathBuf,
}

impl LeaderEpochCache {
    /// Loads the `leader-epoch-checkpoint` file of the partition in `dir` as a plain file
    /// (through [`PwriteStorage`]); see [`LeaderEpochCache::with_storage`].
    ///
    /// # Errors
    ///
    /// As [`LeaderEpochCache::with_storage`].
    pub fn open(dir: &Path) -> Result<Self, Error> {
        Self::with_storage(Arc::new(PwriteStorage::new()), dir)
    }

    /// Loads the `leader-epoch-checkpoint` file of the partition in `dir` through `storage` (the
    /// log's own), through which every later change is written too: the file is durable exactly
    /// when the storage says so. A missing (or empty) file is an empty cache, and nothing is
    /// written.
    ///
    /// The entries are assigned one by one, as Kafka's constructor does: one that does not follow
    /// those before it removes them as its assignment would (the file keeps them until the
    /// cache's next change writes it).
    ///
    /// Fails with [`Error::Io`] when the file cannot be read, and with [`Error::Corrupt`] naming
    /// the file and the line when it does not parse (Kafka's `CheckpointFile` errors), or when an
    /// entry holds a negative epoch or start offset.
    ///
    /// # Errors
    ///
    /// [`Error::Io`] when the file cannot be read; [`Error::Corrupt`] as above.
    pub fn with_storage(storage: Arc<dyn Storage>, dir: &Path) -> Result<Self, Error> {
        let path = dir.join(LEADER_EPOCH_CHECKPOINT_FILE);
        // The text is decoded here rather than through `LeaderEpochCheckpoint::read` so that a
        // negative entry, which only this layer refuses, can name its line's position.
        let text = match read_if_exists(&*storage, &path).map_err(index_io)? {
            Some(bytes) => String::from_utf8(bytes).map_err(|e| Error::Corrupt {
                path: path.clone(),
                position: e.utf8_error().valid_up_to() as u64,
                reason: "not valid UTF-8".into(),
            })?,
            None => String::new(),
        };
        let decoded = decode_checkpoint::<EpochEntry>(&path, CHECKPOINT_VERSION, &text)?;
        let entries = load_entries(&path, &text, &decoded)?;
        Ok(LeaderEpochCache {
            entries,
            checkpoint: Some(EpochCheckpoint { storage, path }),
        })
    }

    /// Creates the empty `leader-epoch-checkpoint` (0 bytes, read as no entries) of a partition
    /// being created in `dir`, as Kafka's `CheckpointFile` constructor creates a missing file with
    /// the log. Through `storage`, without a sync of its own: a 0-byte file has no data to sync,
    /// and its name is durable at the next sync of `dir` (the create's `partition.metadata`
    /// replacement, which follows). Only a create calls it, so an open never writes the
    /// checkpoint it has not changed.
    ///
    /// # Errors
    ///
    /// [`Error::Io`] when the file cannot be created.
    pub fn create_empty_checkpoint(storage: &dyn Storage, dir: &Path) -> Result<(), Error> {
        let path = dir.join(LEADER_EPOCH_CHECKPOINT_FILE);
        storage
            .open(&path, OpenMode::CreateOrOpen)
            .map(drop)
            .map_err(index_io)
    }

    /// An empty cache that is never persisted (tests, simulation).
    pub fn in_memory() -> Self {
        LeaderEpochCache {
            entries: Vec::new(),
            checkpoint: None,
        }
    }

    /// Records that `epoch` starts at `start_offset` (Kafka's `assign`), and persists the change.
    /// Returns whether the cache changed.
    ///
    /// Nothing changes when `epoch` is already the latest epoch and `start_offset` is not before
    /// its start (the common case: every batch appended in the current epoch calls this). Otherwise
    /// the trailing entries whose epoch is `>= epoch` or whose start offset is `>= start_offset`
    /// are removed first — they belong to a history the log no longer has — so the entries stay
    /// strictly increasing, and the new entry becomes the latest.
    ///
    /// A negative epoch or start offset (Kafka's UNDEFINED, `-1`) is ignored and returns
    /// `Ok(false)`: batches from old message formats carry no epoch.
    ///
    /// # Errors
    ///
    /// [`Error::Io`] when the checkpoint cannot be written; the cache is then left as it was.
    pub fn assign(&mut self, epoch: LeaderEpoch, start_offset: Offset) -> Result<bool, Error> {
        if epoch.get() < 0 || start_offset.get() < 0 {
            tracing::debug!(%epoch, %start_offset, "ignoring an undefined leader epoch entry");
            return Ok(false);
        }
        let new_entry = EpochEntry {
            epoch,
            start_offset,
        };
        if !update_needed(&self.entries, new_entry) {
            return Ok(false);
        }
        let mut entries = self.entries.clone();
        assign_to(
            &mut entries,
            new_entry,
            self.checkpoint.as_ref().map(|c| &*c.path),
        );
        self.replace(entries)?;
        Ok(true)
    }

    /// The latest epoch, if any.
    pub fn latest_epoch(&self) -> Option<LeaderEpoch> {
        self.latest_entry().map(|e| e.epoch)
    }

    /// The latest entry, if any.
    pub fn latest_entry(&self) -> Option<EpochEntry> {
        self.entries.last().copied()
    }

    /// The earliest entry, if any.
    pub fn earliest_entry(&self) -> Option<EpochEntry> {
        self.entries.first().copied()
    }

    /// Every entry, in increasing epoch (and start offset) order.
    pub fn entries(&self) -> &[EpochEntry] {
        &self.entries
    }

    /// Whether the cache holds no entry.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Kafka's `endOffsetFor(requestedEpoch, logEndOffset)`, the answer to `OffsetsForLeaderEpoch`:
    /// the largest epoch `<= requested` and the offset where it ends (the start of the next
    /// epoch), as `(epoch, end offset)`. UNDEFINED is `(LeaderEpoch::NONE, Offset::UNKNOWN)`, i.e.
    /// `(-1, -1)`.
    ///
    /// - `requested` is UNDEFINED (`-1`) → UNDEFINED;
    /// - `requested` is the latest epoch → `(requested, log_end_offset)`;
    /// - no epoch above `requested` is known (also: the cache is empty) → UNDEFINED;
    /// - no epoch `<= requested` is known → `(requested, start of the first epoch)`: the data of
    ///   earlier epochs is gone, so the asker should keep nothing past where this log's history
    ///   begins;
    /// - otherwise → `(largest epoch <= requested, start of the first epoch > requested)`.
    pub fn end_offset_for(
        &self,
        requested: LeaderEpoch,
        log_end_offset: Offset,
    ) -> (LeaderEpoch, Offset) {
        const UNDEFINED: (LeaderEpoch, Offset) = (LeaderEpoch::NONE, Offset::UNKNOWN);
        if requested == LeaderEpoch::NONE {
            return UNDEFINED;
        }
        if self.latest_epoch() == Some(requested) {
            return (requested, log_end_offset);
        }
        let higher = self.entries.partition_point(|e| e.epoch <= requested);
        let Some(next) = self.entries.get(higher) else {
            return UNDEFINED;
        };
        match higher.checked_sub(1) {
            None => (requested, next.start_offset),
            Some(floor) => (self.entries[floor].epoch, next.start_offset),
        }
    }

    /// The epoch of the last entry starting at or before `offset`: the epoch `offset` was written
    /// in, if the log holds it. `None` when every entry starts after `offset`.
    pub fn epoch_for_offset(&self, offset: Offset) -> Option<LeaderEpoch> {
        let after = self.entries.partition_point(|e| e.start_offset <= offset);
        after.checked_sub(1).map(|i| self.entries[i].epoch)
    }

    /// The largest epoch in the cache below `epoch` (Kafka's `previousEpoch(epoch)`, a
    /// `lowerKey`); `epoch` itself need not be in the cache.
    pub fn previous_epoch(&self, epoch: LeaderEpoch) -> Option<LeaderEpoch> {
        let at = self.entries.partition_point(|e| e.epoch < epoch);
        at.checked_sub(1).map(|i| self.entries[i].epoch)
    }

    /// Removes the entries starting at or after `end_offset` (the log was truncated to it), and
    /// persists the change. A negative `end_offset` (UNDEFINED) changes nothing, as in Kafka.
    /// The entries are gone from memory even when the write fails (see the module docs).
    ///
    /// # Errors
    ///
    /// [`Error::Io`] when the checkpoint cannot be written (the entries are removed anyway).
    pub fn truncate_from_end(&mut self, end_offset: Offset) -> Result<(), Error> {
        if end_offset.get() < 0 {
            return Ok(());
        }
        let keep = self
            .entries
            .partition_point(|e| e.start_offset < end_offset);
        if keep == self.entries.len() {
            return Ok(());
        }
        self.remove(self.entries[..keep].to_vec())
    }

    /// Removes the entries starting at or before `start_offset` (the log start moved up to it)
    /// and puts back the last removed epoch starting at `start_offset`, so the epoch the new log
    /// start was written in survives; persists the change. Nothing changes when every entry starts
    /// after `start_offset`. The entries are gone from memory even when the write fails (see the
    /// module docs).
    ///
    /// # Errors
    ///
    /// [`Error::Io`] when the checkpoint cannot be written (the entries are removed anyway).
    pub fn truncate_from_start(&mut self, start_offset: Offset) -> Result<(), Error> {
        let removed = self
            .entries
            .partition_point(|e| e.start_offset <= start_offset);
        let Some(last_removed) = removed.checked_sub(1).map(|i| self.entries[i]) else {
            return Ok(());
        };
        let survivor = EpochEntry {
            epoch: last_removed.epoch,
            start_offset,
        };
        if removed == 1 && last_removed == survivor {
            return Ok(());
        }
        if let Some(next) = self.entries.get(removed) {
            assert!(
                survivor.epoch < next.epoch && survivor.start_offset < next.start_offset,
                "epoch entry {survivor:?} does not precede {next:?}"
            );
        }
        let mut entries = Vec::with_capacity(self.entries.len() - removed + 1);
        entries.push(survivor);
        entries.extend_from_slice(&self.entries[removed..]);
        self.remove(entries)
    }

    /// Removes every entry and persists an empty checkpoint (the log was truncated fully). The
    /// entries are gone from memory even when the write fails (see the module docs).
    ///
    /// # Errors
    ///
    /// [`Error::Io`] when the checkpoint cannot be written (the entries are removed anyway).
    pub fn clear(&mut self) -> Result<(), Error> {
        self.remove(Vec::new())
    }

    /// Makes `entries` (what a removal leaves) the cache's, then persists them: on error the
    /// cache holds them all the same, and the file the entries before.
    fn remove(&mut self, entries: Vec<EpochEntry>) -> Result<(), Error> {
        let before = std::mem::replace(&mut self.entries, entries);
        let r = self.persist(&self.entries);
        if let Err(e) = &r {
            tracing::error!(
                checkpoint = ?self.checkpoint.as_ref().map(|c| &c.path),
                ?before,
                after = ?self.entries,
                "leader epoch entries removed in memory only, the checkpoint write failed: {}",
                ErrorChain(e)
            );
        }
        r
    }

    /// Persists `entries`, then makes them the cache's: on error the cache is unchanged.
    fn replace(&mut self, entries: Vec<EpochEntry>) -> Result<(), Error> {
        debug_assert!(
            entries
                .windows(2)
                .all(|w| w[0].epoch < w[1].epoch && w[0].start_offset < w[1].start_offset),
            "epoch entries not strictly increasing: {entries:?}"
        );
        self.persist(&entries)?;
        self.entries = entries;
        Ok(())
    }

    /// Writes `entries` to the checkpoint file, if the cache has one.
    fn persist(&self, entries: &[EpochEntry]) -> Result<(), Error> {
        if let Some(c) = &self.checkpoint {
            let text = encode_checkpoint(CHECKPOINT_VERSION, entries);
            replace_durably(&*c.storage, &c.path, text.into_bytes()).map_err(index_io)?;
        }
        Ok(())
    }
}

/// Whether Kafka's `assign` of `new_entry` changes `entries`: not when its epoch is the latest
/// and it starts at or after the latest entry's start (every batch of the current epoch).
fn update_needed(entries: &[EpochEntry], new_entry: EpochEntry) -> bool {
    entries.last().is_none_or(|latest| {
        latest.epoch != new_entry.epoch || new_entry.start_offset < latest.start_offset
    })
}

/// Kafka's `assign` of a non-negative `new_entry` that [`update_needed`]: the trailing entries
/// whose epoch is `>=` its epoch or whose start is `>=` its start are removed (they belong to a
/// history the log no longer has, or break the order), with Kafka's warning when that removed
/// more than an entry starting where the new one does, and the new entry becomes the latest.
/// `checkpoint` names the file in the warning.
fn assign_to(entries: &mut Vec<EpochEntry>, new_entry: EpochEntry, checkpoint: Option<&Path>) {
    // Both fields increase along the entries, so the entries to remove are a suffix.
    let keep = entries
        .partition_point(|e| e.epoch < new_entry.epoch && e.start_offset < new_entry.start_offset);
    if let Some(previous) = keep.checked_sub(1).map(|i| entries[i]) {
        assert!(
            previous.epoch < new_entry.epoch && previous.start_offset < new_entry.start_offset,
            "epoch entry {new_entry:?} does not follow {previous:?}"
        );
    }
    let removed = &entries[keep..];
    // Replacing only the latest entry at the same offset is expected (a leader that wrote
    // nothing in its epoch); anything more means data of those epochs was truncated.
    if removed.len() > 1
        || removed
            .first()
            .is_some_and(|r| r.start_offset != new_entry.start_offset)
    {
        tracing::warn!(
            ?checkpoint,
            ?new_entry,
            ?removed,
            "new leader epoch entry removed conflicting entries"
        );
    }
    entries.truncate(keep);
    entries.push(new_entry);
}

/// The cache Kafka's `LeaderEpochFileCache` constructor builds from decoded `entries`: each
/// assigned in turn, so an entry that does not follow the ones before (not written by a Kafka
/// since 2.1, whose `assign` keeps both fields increasing) removes them as a later assignment
/// would, with the same warning. A negative epoch or start offset, which Kafka's `assign` throws
/// on, is [`Error::Corrupt`] naming its line (`text` is the file's text).
fn load_entries(path: &Path, text: &str, entries: &[EpochEntry]) -> Result<Vec<EpochEntry>, Error> {
    let mut loaded = Vec::with_capacity(entries.len());
    for (index, &entry) in entries.iter().enumerate() {
        if entry.epoch.get() < 0 || entry.start_offset.get() < 0 {
            // Entry lines follow the version and count lines.
            let line = index + 2;
            let position: usize = text.split_inclusive('\n').take(line).map(str::len).sum();
            return Err(Error::Corrupt {
                path: path.to_path_buf(),
                position: position as u64,
                reason: format!(
                    "line {}: negative epoch or start offset in entry {} {}",
                    line + 1,
                    entry.epoch,
                    entry.start_offset
                ),
            });
        }
        if update_needed(&loaded, entry) {
            assign_to(&mut loaded, entry, Some(path));
        }
    }
    Ok(loaded)
}

/// What a follower (or a mirror, following its source) does with its leader's answer about an
/// epoch: where to truncate, and whether that ends the search for the divergence point.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TruncationDecision {
    /// The offset to truncate the follower's log to (a no-op when at or past its log end).
    pub truncate_to: Offset,
    /// `true`: truncating to `truncate_to` reconciles the follower with the leader and it can
    /// fetch from there. `false`: truncate to `truncate_to`, then ask the leader again about
    /// [`next_epoch_to_query`](Self::next_epoch_to_query) (Kafka's `truncationCompleted = false`).
    pub completed: bool,
    /// When not completed, the follower's own epoch to ask the leader about next (after the
    /// truncation it is the follower's latest epoch); `None` when completed.
    pub next_epoch_to_query: Option<LeaderEpoch>,
}

impl TruncationDecision {
    fn completed(truncate_to: Offset) -> Self {
        TruncationDecision {
            truncate_to,
            completed: true,
            next_epoch_to_query: None,
        }
    }
}

/// Where a follower truncates on its leader's answer `(leader_epoch, leader_end_offset)` — from
/// `OffsetsForLeaderEpoch` about the follower's latest epoch, or a Fetch response's
/// `DivergingEpoch` — given the follower's epoch cache, log end offset and current fetch offset.
/// Kafka's `AbstractFetcherThread.getOffsetTruncationState`, as a pure function.
///
/// - leader end offset UNDEFINED (`-1`) → the fetch offset, completed;
/// - leader epoch UNDEFINED (`-1`) → `min(leader end, follower LEO)`, completed;
/// - otherwise the follower computes its own [`end_offset_for`](LeaderEpochCache::end_offset_for)
///   `(E', O')` of the leader's epoch `E`:
///   - `O'` UNDEFINED (the follower knows no epoch above `E`, or none at all) →
///     `min(leader end, follower LEO)`, completed;
///   - `E' != E` (the follower never saw `E`; `E'` is its largest epoch below) →
///     `min(O', follower LEO)`, not completed: ask again about `E'`;
///   - `E' == E` → `min(leader end, O', follower LEO)`, completed. This includes a follower
///     that knows no epoch `<= E` but a later one: its `end_offset_for` answers
///     `(E, its first start offset)`, as in Kafka.
pub fn truncation_for_leader_answer(
    leader_epoch: LeaderEpoch,
    leader_end_offset: Offset,
    follower: &LeaderEpochCache,
    follower_log_end: Offset,
    fetch_offset: Offset,
) -> TruncationDecision {
    if leader_end_offset == Offset::UNKNOWN {
        return TruncationDecision::completed(fetch_offset);
    }
    if leader_epoch == LeaderEpoch::NONE {
        return TruncationDecision::completed(leader_end_offset.min(follower_log_end));
    }
    let (follower_epoch, follower_end_offset) =
        follower.end_offset_for(leader_epoch, follower_log_end);
    if follower_end_offset == Offset::UNKNOWN {
        TruncationDecision::completed(leader_end_offset.min(follower_log_end))
    } else if follower_epoch != leader_epoch {
        TruncationDecision {
            truncate_to: follower_end_offset.min(follower_log_end),
            completed: false,
            next_epoch_to_query: Some(follower_epoch),
        }
    } else {
        TruncationDecision::completed(
            leader_end_offset
                .min(follower_end_offset)
                .min(follower_log_end),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mirrorlog_index::LeaderEpochCheckpoint;
    use proptest::prelude::*;
    use std::collections::BTreeMap;
    use std::fs;

    fn e(epoch: i32) -> LeaderEpoch {
        LeaderEpoch(epoch)
    }

    fn o(offset: i64) -> Offset {
        Offset(offset)
    }

    fn entries(pairs: &[(i32, i64)]) -> Vec<EpochEntry> {
        pairs
            .iter()
            .map(|&(epoch, start)| EpochEntry {
                epoch: e(epoch),
                start_offset: o(start),
            })
            .collect()
    }

    /// An in-memory cache built by assigning `pairs` in order.
    fn cache(pairs: &[(i32, i64)]) -> LeaderEpochCache {
        let mut cache = LeaderEpochCache::in_memory();
        for &(epoch, start) in pairs {
            cache.assign(e(epoch), o(start)).unwrap();
        }
        cache
    }

    fn end(epoch: i32, offset: i64) -> (LeaderEpoch, Offset) {
        (e(epoch), o(offset))
    }

    const UNDEFINED: (LeaderEpoch, Offset) = (LeaderEpoch::NONE, Offset::UNKNOWN);

    fn checkpoint_text(dir: &Path) -> String {
        fs::read_to_string(dir.join("leader-epoch-checkpoint")).unwrap()
    }

    // ---- assign ----

    #[test]
    fn assigning_to_an_empty_cache_adds_the_entry() {
        let mut cache = LeaderEpochCache::in_memory();
        assert!(cache.is_empty());
        assert!(cache.assign(e(2), o(10)).unwrap());
        assert!(!cache.is_empty());
        assert_eq!(cache.entries(), entries(&[(2, 10)]));
        assert_eq!(cache.latest_epoch(), Some(e(2)));
        assert_eq!(cache.end_offset_for(e(2), o(11)), end(2, 11));
    }

    #[test]
    fn assigning_the_latest_epoch_at_a_later_offset_changes_nothing() {
        let mut cache = cache(&[(2, 6)]);
        assert!(!cache.assign(e(2), o(7)).unwrap());
        assert!(!cache.assign(e(2), o(10)).unwrap());
        assert_eq!(cache.entries(), entries(&[(2, 6)]));
    }

    #[test]
    fn assigning_the_latest_entry_again_changes_nothing() {
        let mut cache = cache(&[(1, 0), (2, 6)]);
        assert!(!cache.assign(e(2), o(6)).unwrap());
        assert_eq!(cache.entries(), entries(&[(1, 0), (2, 6)]));
    }

    #[test]
    fn assigning_the_latest_epoch_at_an_earlier_offset_moves_its_start() {
        let mut cache = cache(&[(1, 0), (2, 9)]);
        assert!(cache.assign(e(2), o(5)).unwrap());
        assert_eq!(cache.entries(), entries(&[(1, 0), (2, 5)]));
    }

    #[test]
    fn assigning_a_new_epoch_at_the_latest_start_offset_replaces_the_latest_entry() {
        // A leader that wrote nothing in epoch 2 before epoch 3 began.
        let mut cache = cache(&[(2, 9)]);
        assert!(cache.assign(e(3), o(9)).unwrap());
        assert_eq!(cache.entries(), entries(&[(3, 9)]));
    }

    #[test]
    fn assigning_a_lower_epoch_removes_every_epoch_at_or_above_it() {
        let mut cache = cache(&[(1, 5), (2, 6)]);
        assert!(cache.assign(e(1), o(7)).unwrap());
        assert_eq!(cache.entries(), entries(&[(1, 7)]));
        assert_eq!(cache.latest_epoch(), Some(e(1)));
        assert_eq!(cache.end_offset_for(e(1), o(8)), end(1, 8));
        assert_eq!(cache.end_offset_for(e(2), o(8)), UNDEFINED);
    }

    #[test]
    fn assigning_a_higher_epoch_at_a_lower_offset_removes_entries_starting_at_or_after_it() {
        let mut cache = cache(&[(2, 6)]);
        assert!(cache.assign(e(3), o(5)).unwrap());
        assert_eq!(cache.entries(), entries(&[(3, 5)]));
    }

    #[test]
    fn assigning_removes_only_the_trailing_entries_that_conflict() {
        let mut by_epoch = cache(&[(1, 0), (3, 10), (5, 20), (7, 30)]);
        assert!(by_epoch.assign(e(4), o(35)).unwrap());
        assert_eq!(by_epoch.entries(), entries(&[(1, 0), (3, 10), (4, 35)]));

        let mut by_offset = cache(&[(1, 0), (3, 10), (5, 20), (7, 30)]);
        assert!(by_offset.assign(e(9), o(15)).unwrap());
        assert_eq!(by_offset.entries(), entries(&[(1, 0), (3, 10), (9, 15)]));

        let mut by_both = cache(&[(1, 0), (3, 10), (5, 20), (7, 30)]);
        assert!(by_both.assign(e(6), o(25)).unwrap());
        assert_eq!(
            by_both.entries(),
            entries(&[(1, 0), (3, 10), (5, 20), (6, 25)])
        );
    }

    #[test]
    fn assigning_an_earlier_start_to_an_older_epoch_truncates_later_entries() {
        let mut cache = cache(&[(5, 11), (6, 12), (7, 13)]);
        assert!(cache.assign(e(7), o(12)).unwrap());
        assert_eq!(cache.entries(), entries(&[(5, 11), (7, 12)]));
        assert_eq!(cache.end_offset_for(e(5), o(0)), end(5, 12));
        assert_eq!(cache.end_offset_for(e(6), o(0)), end(5, 12));
    }

    #[test]
    fn undefined_epochs_and_offsets_are_ignored() {
        let mut cache = cache(&[(1, 0)]);
        assert!(!cache.assign(LeaderEpoch::NONE, o(5)).unwrap());
        assert!(!cache.assign(e(2), Offset::UNKNOWN).unwrap());
        assert!(!cache.assign(e(-7), o(-3)).unwrap());
        assert_eq!(cache.entries(), entries(&[(1, 0)]));
    }

    #[test]
    fn a_follower_receiving_many_batches_tracks_one_entry_per_epoch() {
        let mut cache = LeaderEpochCache::in_memory();
        for (epoch, offset) in [
            (0, 0),
            (0, 1),
            (0, 2),
            (1, 3),
            (1, 4),
            (1, 5),
            (2, 6),
            (2, 7),
        ] {
            cache.assign(e(epoch), o(offset)).unwrap();
        }
        assert_eq!(cache.entries(), entries(&[(0, 0), (1, 3), (2, 6)]));
        assert_eq!(cache.end_offset_for(e(2), o(9)), end(2, 9));
        assert_eq!(cache.end_offset_for(e(0), o(9)), end(0, 3));
        assert_eq!(cache.end_offset_for(e(1), o(9)), end(1, 6));
    }

    #[test]
    fn leaders_changing_without_writes_keep_only_the_latest_epoch_at_that_offset() {
        let mut cache = cache(&[(0, 0), (1, 0)]);
        assert_eq!(cache.entries(), entries(&[(1, 0)]));
        assert_eq!(cache.end_offset_for(e(1), o(0)), end(1, 0));
        assert_eq!(cache.end_offset_for(e(0), o(0)), end(0, 0));
        assert_eq!(cache.end_offset_for(e(1), o(5)), end(1, 5));
        assert_eq!(cache.end_offset_for(e(0), o(5)), end(0, 0));
        cache.assign(e(2), o(5)).unwrap();
        assert_eq!(cache.end_offset_for(e(2), o(10)), end(2, 10));
        assert_eq!(cache.end_offset_for(e(1), o(10)), end(1, 5));
        assert_eq!(cache.end_offset_for(e(0), o(10)), end(0, 0));
    }

    // ---- end_offset_for ----

    #[test]
    fn end_offset_for_the_undefined_epoch_is_undefined() {
        assert_eq!(
            cache(&[(2, 11), (3, 12)]).end_offset_for(LeaderEpoch::NONE, o(0)),
            UNDEFINED
        );
        assert_eq!(
            LeaderEpochCache::in_memory().end_offset_for(LeaderEpoch::NONE, o(73)),
            UNDEFINED
        );
    }

    #[test]
    fn end_offset_for_the_latest_epoch_is_the_log_end_offset() {
        let cache = cache(&[(2, 11), (2, 12)]);
        assert_eq!(cache.end_offset_for(e(2), o(14)), end(2, 14));
        // Epochs need not start from zero.
        let cache = super::tests::cache(&[(2, 6)]);
        assert_eq!(cache.end_offset_for(e(2), o(7)), end(2, 7));
    }

    #[test]
    fn end_offset_for_any_epoch_of_an_empty_cache_is_undefined() {
        let cache = LeaderEpochCache::in_memory();
        assert_eq!(cache.end_offset_for(e(0), o(0)), UNDEFINED);
        assert_eq!(cache.end_offset_for(e(7), o(0)), UNDEFINED);
    }

    #[test]
    fn end_offset_for_an_epoch_above_every_known_epoch_is_undefined() {
        let cache = cache(&[(2, 100)]);
        assert_eq!(cache.end_offset_for(e(3), o(100)), UNDEFINED);
    }

    #[test]
    fn end_offset_for_an_epoch_below_every_known_epoch_is_that_epoch_and_the_first_start() {
        let cache = cache(&[(5, 11), (6, 12), (7, 13)]);
        assert_eq!(cache.end_offset_for(e(4), o(0)), end(4, 11));
        assert_eq!(cache.end_offset_for(e(0), o(0)), end(0, 11));
    }

    #[test]
    fn end_offset_for_a_known_earlier_epoch_is_the_start_of_the_next_epoch() {
        let cache = cache(&[(1, 11), (1, 12), (2, 13), (2, 14), (3, 15), (3, 16)]);
        assert_eq!(cache.end_offset_for(e(2), o(17)), end(2, 15));
        assert_eq!(cache.end_offset_for(e(1), o(17)), end(1, 13));
    }

    #[test]
    fn end_offset_for_an_unknown_epoch_between_known_ones_is_the_floor_epoch_and_next_start() {
        let cache = cache(&[(0, 10), (2, 13), (4, 17)]);
        assert_eq!(cache.end_offset_for(e(1), o(0)), end(0, 13));
        assert_eq!(cache.end_offset_for(e(2), o(0)), end(2, 17));
        assert_eq!(cache.end_offset_for(e(3), o(0)), end(2, 17));
        assert_eq!(cache.end_offset_for(e(4), o(0)), end(4, 0));
        assert_eq!(cache.end_offset_for(e(5), o(0)), UNDEFINED);
    }

    // ---- queries ----

    #[test]
    fn epoch_for_offset_is_the_epoch_of_the_last_entry_starting_at_or_before_it() {
        let cache = cache(&[(0, 10), (1, 20), (5, 30)]);
        assert_eq!(cache.epoch_for_offset(o(25)), Some(e(1)));
        assert_eq!(cache.epoch_for_offset(o(20)), Some(e(1)));
        assert_eq!(cache.epoch_for_offset(o(30)), Some(e(5)));
        assert_eq!(cache.epoch_for_offset(o(50)), Some(e(5)));
        assert_eq!(cache.epoch_for_offset(o(10)), Some(e(0)));
        assert_eq!(cache.epoch_for_offset(o(5)), None);
        assert_eq!(cache.epoch_for_offset(Offset::UNKNOWN), None);
        assert_eq!(LeaderEpochCache::in_memory().epoch_for_offset(o(0)), None);
    }

    #[test]
    fn previous_epoch_is_the_largest_epoch_below_the_given_one() {
        let mut cache = LeaderEpochCache::in_memory();
        assert_eq!(cache.previous_epoch(e(2)), None);
        cache.assign(e(2), o(10)).unwrap();
        assert_eq!(cache.previous_epoch(e(2)), None);
        cache.assign(e(4), o(15)).unwrap();
        assert_eq!(cache.previous_epoch(e(4)), Some(e(2)));
        cache.assign(e(10), o(20)).unwrap();
        assert_eq!(cache.previous_epoch(e(10)), Some(e(4)));
        // The given epoch need not be in the cache.
        assert_eq!(cache.previous_epoch(e(7)), Some(e(4)));
        assert_eq!(cache.previous_epoch(e(99)), Some(e(10)));
        cache.truncate_from_end(o(18)).unwrap();
        assert_eq!(
            cache.previous_epoch(cache.latest_epoch().unwrap()),
            Some(e(2))
        );
    }

    #[test]
    fn earliest_and_latest_entries_are_the_ends_of_the_cache() {
        let empty = LeaderEpochCache::in_memory();
        assert_eq!((empty.earliest_entry(), empty.latest_entry()), (None, None));
        assert_eq!(empty.latest_epoch(), None);
        let cache = cache(&[(2, 6), (3, 8), (4, 11)]);
        assert_eq!(cache.earliest_entry(), entries(&[(2, 6)]).pop());
        assert_eq!(cache.latest_entry(), entries(&[(4, 11)]).pop());
        assert_eq!(cache.latest_epoch(), Some(e(4)));
    }

    // ---- truncation ----

    #[test]
    fn truncating_from_the_end_at_an_epoch_start_drops_that_epoch_and_later_ones() {
        let mut cache = cache(&[(2, 6), (3, 8), (4, 11)]);
        cache.truncate_from_end(o(8)).unwrap();
        assert_eq!(cache.entries(), entries(&[(2, 6)]));
    }

    #[test]
    fn truncating_from_the_end_inside_an_epoch_keeps_that_epoch() {
        let mut cache = cache(&[(2, 6), (3, 8), (4, 11)]);
        cache.truncate_from_end(o(9)).unwrap();
        assert_eq!(cache.latest_epoch(), Some(e(3)));
        assert_eq!(cache.entries(), entries(&[(2, 6), (3, 8)]));
    }

    #[test]
    fn truncating_from_the_end_past_the_latest_start_changes_nothing() {
        let mut cache = cache(&[(2, 6), (3, 8), (4, 11)]);
        cache.truncate_from_end(o(12)).unwrap();
        assert_eq!(cache.entries(), entries(&[(2, 6), (3, 8), (4, 11)]));
    }

    #[test]
    fn truncating_from_the_end_at_the_first_start_empties_the_cache() {
        let mut cache = cache(&[(2, 6), (3, 8)]);
        cache.truncate_from_end(o(6)).unwrap();
        assert!(cache.is_empty());
    }

    #[test]
    fn truncating_from_the_end_at_the_undefined_offset_changes_nothing() {
        let mut cache = cache(&[(2, 6), (3, 8), (4, 11)]);
        cache.truncate_from_end(Offset::UNKNOWN).unwrap();
        assert_eq!(cache.entries().len(), 3);
    }

    #[test]
    fn truncating_an_empty_cache_from_either_end_changes_nothing() {
        let mut cache = LeaderEpochCache::in_memory();
        cache.truncate_from_end(o(7)).unwrap();
        cache.truncate_from_start(o(7)).unwrap();
        assert!(cache.is_empty());
    }

    #[test]
    fn truncating_from_the_start_at_an_epoch_start_keeps_that_epoch_and_later_ones() {
        let mut cache = cache(&[(2, 6), (3, 8), (4, 11)]);
        cache.truncate_from_start(o(8)).unwrap();
        assert_eq!(cache.entries(), entries(&[(3, 8), (4, 11)]));
    }

    #[test]
    fn truncating_from_the_start_before_the_first_entry_changes_nothing() {
        let mut cache = cache(&[(2, 6), (3, 8), (4, 11)]);
        cache.truncate_from_start(o(1)).unwrap();
        assert_eq!(cache.entries(), entries(&[(2, 6), (3, 8), (4, 11)]));
    }

    #[test]
    fn truncating_from_the_start_at_the_first_start_changes_nothing() {
        let mut cache = cache(&[(2, 6), (3, 8), (4, 11)]);
        cache.truncate_from_start(o(6)).unwrap();
        assert_eq!(cache.entries(), entries(&[(2, 6), (3, 8), (4, 11)]));
    }

    #[test]
    fn truncating_from_the_start_at_the_latest_start_keeps_only_the_latest_epoch() {
        let mut cache = cache(&[(2, 6), (3, 8), (4, 11)]);
        cache.truncate_from_start(o(11)).unwrap();
        assert_eq!(cache.entries(), entries(&[(4, 11)]));
    }

    #[test]
    fn truncating_from_the_start_inside_an_epoch_reinserts_it_at_the_new_start() {
        let mut cache = cache(&[(2, 6), (3, 8), (4, 11)]);
        cache.truncate_from_start(o(9)).unwrap();
        assert_eq!(cache.entries(), entries(&[(3, 9), (4, 11)]));

        let mut cache = super::tests::cache(&[(0, 0), (1, 7), (2, 10)]);
        cache.truncate_from_start(o(5)).unwrap();
        assert_eq!(cache.entries(), entries(&[(0, 5), (1, 7), (2, 10)]));
    }

    #[test]
    fn truncating_from_the_start_past_the_latest_start_moves_the_latest_epoch_up() {
        let mut cache = cache(&[(2, 6), (3, 8), (4, 11)]);
        cache.truncate_from_start(o(15)).unwrap();
        assert_eq!(cache.entries(), entries(&[(4, 15)]));
    }

    #[test]
    fn truncating_from_the_start_at_the_undefined_offset_changes_nothing() {
        let mut cache = cache(&[(2, 6), (3, 8), (4, 11)]);
        cache.truncate_from_start(Offset::UNKNOWN).unwrap();
        assert_eq!(cache.entries().len(), 3);
    }

    #[test]
    fn clearing_removes_every_entry() {
        let mut cache = cache(&[(2, 6), (3, 8), (4, 11)]);
        cache.clear().unwrap();
        assert!(cache.is_empty());
        assert_eq!(cache.latest_epoch(), None);
    }

    // ---- persistence ----

    #[test]
    fn a_missing_checkpoint_opens_empty_and_is_not_created() {
        let dir = tempfile::tempdir().unwrap();
        let cache = LeaderEpochCache::open(dir.path()).unwrap();
        assert!(cache.is_empty());
        assert!(!dir.path().join("leader-epoch-checkpoint").exists());
    }

    #[test]
    fn an_empty_checkpoint_file_opens_empty() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("leader-epoch-checkpoint"), "").unwrap();
        assert!(LeaderEpochCache::open(dir.path()).unwrap().is_empty());
    }

    #[test]
    fn every_change_is_written_in_kafkas_text_format_and_reopens_the_same() {
        let dir = tempfile::tempdir().unwrap();
        let mut cache = LeaderEpochCache::open(dir.path()).unwrap();
        cache.assign(e(0), o(0)).unwrap();
        assert_eq!(checkpoint_text(dir.path()), "0\n1\n0 0\n");
        cache.assign(e(3), o(100)).unwrap();
        cache.assign(e(5), o(2000)).unwrap();
        assert_eq!(checkpoint_text(dir.path()), "0\n3\n0 0\n3 100\n5 2000\n");
        let reopened = LeaderEpochCache::open(dir.path()).unwrap();
        assert_eq!(reopened.entries(), cache.entries());

        cache.truncate_from_end(o(2000)).unwrap();
        assert_eq!(checkpoint_text(dir.path()), "0\n2\n0 0\n3 100\n");
        cache.truncate_from_start(o(50)).unwrap();
        assert_eq!(checkpoint_text(dir.path()), "0\n2\n0 50\n3 100\n");
        cache.clear().unwrap();
        assert_eq!(checkpoint_text(dir.path()), "0\n0\n");
        assert!(LeaderEpochCache::open(dir.path()).unwrap().is_empty());
    }

    #[test]
    fn a_removal_whose_checkpoint_write_fails_still_leaves_memory() {
        use mirrorlog_segment::io::{Fault, FaultKind, IoOp, SimStorage};
        let sim = SimStorage::new();
        let dir = Path::new("/data/orders-0");
        sim.create_dir_all(dir).unwrap();
        let storage: Arc<dyn Storage> = Arc::new(sim.clone());
        let mut cache = LeaderEpochCache::with_storage(storage.clone(), dir).unwrap();
        for (epoch, start) in [(0, 0), (3, 100), (5, 200)] {
            cache.assign(e(epoch), o(start)).unwrap();
        }
        let reopened = || {
            LeaderEpochCache::with_storage(storage.clone(), dir)
                .unwrap()
                .entries()
                .to_vec()
        };
        let full = |kind: FaultKind| {
            sim.inject(Fault::new(IoOp::WriteAt, kind).on_path("leader-epoch-checkpoint"));
        };

        // The log was truncated to 150, but the disk is full: the cache must not go on
        // answering that epoch 3 runs to 200 (past the log end).
        full(FaultKind::NoSpace);
        assert!(cache.truncate_from_end(o(150)).is_err());
        assert_eq!(sim.pending_faults(), 0);
        assert_eq!(cache.entries(), entries(&[(0, 0), (3, 100)]));
        assert_eq!(cache.end_offset_for(e(3), o(150)), (e(3), o(150)));
        assert_eq!(reopened(), entries(&[(0, 0), (3, 100), (5, 200)]));

        full(FaultKind::Eio);
        assert!(cache.truncate_from_start(o(120)).is_err());
        assert_eq!(cache.entries(), entries(&[(3, 120)]));

        full(FaultKind::NoSpace);
        assert!(cache.clear().is_err());
        assert!(cache.is_empty());
        assert_eq!(cache.end_offset_for(e(3), o(120)), (e(-1), o(-1)));

        // A new entry is still written before it is visible.
        full(FaultKind::NoSpace);
        assert!(cache.assign(e(7), o(120)).is_err());
        assert!(cache.is_empty());
        cache.assign(e(7), o(120)).unwrap();
        assert_eq!(reopened(), entries(&[(7, 120)]));
    }

    #[test]
    fn truncations_are_written_to_the_checkpoint() {
        let dir = tempfile::tempdir().unwrap();
        let mut cache = LeaderEpochCache::open(dir.path()).unwrap();
        for (epoch, start) in [(2, 6), (3, 8), (4, 11)] {
            cache.assign(e(epoch), o(start)).unwrap();
        }
        cache.truncate_from_end(o(11)).unwrap();
        cache.truncate_from_start(o(8)).unwrap();
        let file = LeaderEpochCheckpoint::in_dir(dir.path());
        assert_eq!(file.read().unwrap(), entries(&[(3, 8)]));
    }

    #[test]
    fn operations_that_change_nothing_do_not_rewrite_the_checkpoint() {
        let dir = tempfile::tempdir().unwrap();
        let mut cache = LeaderEpochCache::open(dir.path()).unwrap();
        cache.assign(e(2), o(6)).unwrap();
        cache.assign(e(3), o(8)).unwrap();
        // A marker only a rewrite would replace.
        let path = dir.path().join("leader-epoch-checkpoint");
        fs::write(&path, "marker").unwrap();
        assert!(!cache.assign(e(3), o(9)).unwrap());
        cache.truncate_from_end(o(9)).unwrap();
        cache.truncate_from_start(o(6)).unwrap();
        cache.truncate_from_start(o(2)).unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "marker");
    }

    #[test]
    fn kafkas_own_checkpoint_text_with_loose_whitespace_opens() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(
            dir.path().join("leader-epoch-checkpoint"),
            "0\r\n2\r\n1  5\r\n4\t9",
        )
        .unwrap();
        let cache = LeaderEpochCache::open(dir.path()).unwrap();
        assert_eq!(cache.entries(), entries(&[(1, 5), (4, 9)]));
    }

    fn open_corrupt(text: &str) -> (u64, String) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("leader-epoch-checkpoint");
        fs::write(&path, text).unwrap();
        match LeaderEpochCache::open(dir.path()) {
            Err(Error::Corrupt {
                path: named,
                position,
                reason,
            }) => {
                assert_eq!(named, path, "{text:?}");
                (position, reason)
            }
            other => panic!("{text:?}: expected Corrupt, got {other:?}"),
        }
    }

    #[test]
    fn a_checkpoint_whose_entries_do_not_increase_opens_as_kafka_assigns_them_in_turn() {
        // Kafka's constructor assigns each entry: one that does not follow the ones before
        // removes those its assignment conflicts with; the file is left as it is.
        let cases: &[(&str, &[(i32, i64)])] = &[
            ("0\n2\n3 10\n2 20\n", &[(2, 20)]),
            ("0\n2\n3 10\n3 20\n", &[(3, 10)]),
            ("0\n2\n3 10\n3 5\n", &[(3, 5)]),
            ("0\n2\n3 10\n4 5\n", &[(4, 5)]),
            ("0\n2\n3 10\n4 10\n", &[(4, 10)]),
            ("0\n3\n1 0\n3 10\n2 20\n", &[(1, 0), (2, 20)]),
            ("0\r\n3\r\n0 0\r\n1 5\r\n1 6\r\n", &[(0, 0), (1, 5)]),
        ];
        for &(text, expected) in cases {
            let dir = tempfile::tempdir().unwrap();
            fs::write(dir.path().join("leader-epoch-checkpoint"), text).unwrap();
            let cache =
                LeaderEpochCache::open(dir.path()).unwrap_or_else(|e| panic!("{text:?}: {e}"));
            assert_eq!(cache.entries(), entries(expected), "{text:?}");
            assert_eq!(checkpoint_text(dir.path()), text, "not written at the open");
        }
    }

    #[test]
    fn a_checkpoint_with_a_negative_entry_is_corrupt() {
        let (position, reason) = open_corrupt("0\n2\n-1 0\n3 10\n");
        assert_eq!(position, 4);
        assert!(reason.contains("line 3: negative"), "{reason}");
        let (position, reason) = open_corrupt("0\n2\n1 0\n3 -1\n");
        assert_eq!(position, 8);
        assert!(reason.contains("line 4: negative"), "{reason}");
    }

    #[test]
    fn a_checkpoint_that_does_not_parse_is_corrupt() {
        assert!(open_corrupt("1\n0\n").1.contains("unsupported version"));
        assert!(open_corrupt("0\n2\n1 5\n").1.contains("expected 2 entries"));
        assert!(open_corrupt("0\n1\n1 x\n").1.contains("malformed entry"));
        assert_eq!(
            open_corrupt("0\n1\n\u{0}\n").1,
            "line 3: malformed entry \"\\0\""
        );
        let dir = tempfile::tempdir().unwrap();
        fs::write(
            dir.path().join("leader-epoch-checkpoint"),
            b"0\n1\n\xff 0\n",
        )
        .unwrap();
        assert!(matches!(
            LeaderEpochCache::open(dir.path()),
            Err(Error::Corrupt { position: 4, .. })
        ));
    }

    #[test]
    fn an_unreadable_checkpoint_is_an_io_error_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("leader-epoch-checkpoint");
        fs::create_dir(&path).unwrap();
        match LeaderEpochCache::open(dir.path()) {
            Err(Error::Io {
                op, path: named, ..
            }) => {
                // The storage's operation: opening a directory for reading succeeds, reading it
                // fails.
                assert_eq!(op, "read_at");
                assert_eq!(named, path);
            }
            other => panic!("expected Io, got {other:?}"),
        }
    }

    #[test]
    fn a_failed_write_of_a_new_entry_leaves_the_cache_unchanged_and_removals_apply() {
        let dir = tempfile::tempdir().unwrap();
        let partition = dir.path().join("foo-0");
        fs::create_dir(&partition).unwrap();
        let mut cache = LeaderEpochCache::open(&partition).unwrap();
        cache.assign(e(1), o(0)).unwrap();
        cache.assign(e(2), o(10)).unwrap();
        fs::remove_dir_all(&partition).unwrap();
        assert!(matches!(cache.assign(e(3), o(20)), Err(Error::Io { .. })));
        assert_eq!(cache.entries(), entries(&[(1, 0), (2, 10)]));
        // Removals describe records the log no longer has: gone from memory all the same.
        assert!(matches!(
            cache.truncate_from_end(o(5)),
            Err(Error::Io { .. })
        ));
        assert_eq!(cache.entries(), entries(&[(1, 0)]));
        assert!(matches!(
            cache.truncate_from_start(o(2)),
            Err(Error::Io { .. })
        ));
        assert_eq!(cache.entries(), entries(&[(1, 2)]));
        assert!(matches!(cache.clear(), Err(Error::Io { .. })));
        assert!(cache.is_empty());
    }

    // ---- truncation_for_leader_answer, branch by branch ----

    fn decide(
        leader: (i32, i64),
        follower: &LeaderEpochCache,
        follower_log_end: i64,
        fetch_offset: i64,
    ) -> TruncationDecision {
        truncation_for_leader_answer(
            e(leader.0),
            o(leader.1),
            follower,
            o(follower_log_end),
            o(fetch_offset),
        )
    }

    fn done(offset: i64) -> TruncationDecision {
        TruncationDecision {
            truncate_to: o(offset),
            completed: true,
            next_epoch_to_query: None,
        }
    }

    #[test]
    fn an_undefined_leader_end_offset_truncates_to_the_fetch_offset() {
        let follower = cache(&[(1, 0), (3, 10)]);
        assert_eq!(decide((-1, -1), &follower, 20, 15), done(15));
        assert_eq!(decide((3, -1), &follower, 20, 15), done(15));
    }

    #[test]
    fn an_undefined_leader_epoch_truncates_to_the_leader_end_offset_if_lower() {
        let follower = cache(&[(1, 0), (3, 10)]);
        assert_eq!(decide((-1, 12), &follower, 20, 20), done(12));
        assert_eq!(decide((-1, 25), &follower, 20, 20), done(20));
    }

    #[test]
    fn a_follower_without_a_later_epoch_truncates_to_the_leader_end_offset_if_lower() {
        // An empty follower cache.
        let empty = LeaderEpochCache::in_memory();
        assert_eq!(decide((3, 12), &empty, 20, 20), done(12));
        assert_eq!(decide((3, 25), &empty, 20, 20), done(20));
        // A leader epoch above every epoch the follower knows.
        let follower = cache(&[(1, 0), (3, 10)]);
        assert_eq!(decide((4, 15), &follower, 20, 20), done(15));
    }

    #[test]
    fn a_leader_epoch_the_follower_never_saw_truncates_to_its_floor_epoch_end_and_asks_again() {
        let follower = cache(&[(1, 0), (3, 10), (5, 20)]);
        assert_eq!(
            decide((4, 30), &follower, 25, 25),
            TruncationDecision {
                truncate_to: o(20),
                completed: false,
                next_epoch_to_query: Some(e(3)),
            }
        );
        // The follower's log may end before its epoch cache says the epoch ends.
        let short = cache(&[(1, 0), (3, 10), (5, 20)]);
        assert_eq!(decide((4, 30), &short, 18, 18).truncate_to, o(18));
    }

    #[test]
    fn a_shared_epoch_truncates_to_the_lowest_of_both_ends_and_the_log_end() {
        let follower = cache(&[(1, 0), (3, 10), (5, 20)]);
        // The leader's epoch 3 ended first.
        assert_eq!(decide((3, 15), &follower, 25, 25), done(15));
        // The follower's epoch 3 ended first.
        assert_eq!(decide((3, 22), &follower, 25, 25), done(20));
        // The follower's latest epoch: its end is the follower's log end.
        assert_eq!(decide((5, 30), &follower, 25, 25), done(25));
        assert_eq!(decide((5, 23), &follower, 25, 25), done(23));
    }

    #[test]
    fn a_leader_epoch_below_every_follower_epoch_truncates_to_the_followers_first_start_at_most() {
        // Kafka: the follower's endOffsetFor answers (E, its first start offset), so E' == E.
        let follower = cache(&[(3, 10), (5, 20)]);
        assert_eq!(decide((2, 15), &follower, 25, 25), done(10));
        assert_eq!(decide((2, 7), &follower, 25, 25), done(7));
    }

    // ---- model-based property tests ----

    /// Kafka's algorithm, written the way Kafka writes it: a map from epoch to start offset,
    /// edited by walking from the ends.
    #[derive(Debug, Default, Clone)]
    struct Model(BTreeMap<i32, i64>);

    impl Model {
        fn assign(&mut self, epoch: i32, start: i64) {
            if epoch < 0 || start < 0 {
                return;
            }
            if let Some((&le, &ls)) = self.0.last_key_value()
                && le == epoch
                && start >= ls
            {
                return;
            }
            while let Some((&le, &ls)) = self.0.last_key_value() {
                if le >= epoch || ls >= start {
                    self.0.pop_last();
                } else {
                    break;
                }
            }
            self.0.insert(epoch, start);
        }

        fn truncate_from_end(&mut self, end: i64) {
            if end < 0 {
                return;
            }
            while let Some((_, &ls)) = self.0.last_key_value() {
                if ls >= end {
                    self.0.pop_last();
                } else {
                    break;
                }
            }
        }

        fn truncate_from_start(&mut self, start: i64) {
            let mut last_removed = None;
            while let Some((&fe, &fs)) = self.0.first_key_value() {
                if fs <= start {
                    last_removed = Some(fe);
                    self.0.pop_first();
                } else {
                    break;
                }
            }
            if let Some(epoch) = last_removed {
                self.0.insert(epoch, start);
            }
        }

        fn entries(&self) -> Vec<EpochEntry> {
            self.0
                .iter()
                .map(|(&epoch, &start)| EpochEntry {
                    epoch: e(epoch),
                    start_offset: o(start),
                })
                .collect()
        }

        /// `endOffsetFor` by linear scans.
        fn end_offset_for(&self, requested: i32, leo: i64) -> (LeaderEpoch, Offset) {
            if requested == -1 {
                return UNDEFINED;
            }
            if self.0.keys().next_back() == Some(&requested) {
                return end(requested, leo);
            }
            let Some((_, &next_start)) = self.0.iter().find(|(k, _)| **k > requested) else {
                return UNDEFINED;
            };
            match self.0.keys().rfind(|k| **k <= requested) {
                Some(&floor) => end(floor, next_start),
                None => end(requested, next_start),
            }
        }

        fn epoch_for_offset(&self, offset: i64) -> Option<LeaderEpoch> {
            self.0
                .iter()
                .filter(|(_, s)| **s <= offset)
                .map(|(k, _)| e(*k))
                .next_back()
        }
    }

    #[derive(Debug, Clone)]
    enum Op {
        Assign(i32, i64),
        TruncateFromEnd(i64),
        TruncateFromStart(i64),
        Clear,
    }

    fn arb_op() -> impl Strategy<Value = Op> {
        prop_oneof![
            8 => (-1..20i32, -1..100i64).prop_map(|(e, o)| Op::Assign(e, o)),
            2 => (-1..110i64).prop_map(Op::TruncateFromEnd),
            2 => (-1..110i64).prop_map(Op::TruncateFromStart),
            1 => Just(Op::Clear),
        ]
    }

    fn apply(cache: &mut LeaderEpochCache, model: &mut Model, op: &Op) {
        match *op {
            Op::Assign(epoch, start) => {
                let before = model.clone();
                model.assign(epoch, start);
                let changed = cache.assign(e(epoch), o(start)).unwrap();
                assert_eq!(changed, before.0 != model.0, "{op:?}");
            }
            Op::TruncateFromEnd(offset) => {
                model.truncate_from_end(offset);
                cache.truncate_from_end(o(offset)).unwrap();
            }
            Op::TruncateFromStart(offset) => {
                model.truncate_from_start(offset);
                cache.truncate_from_start(o(offset)).unwrap();
            }
            Op::Clear => {
                model.0.clear();
                cache.clear().unwrap();
            }
        }
    }

    fn assert_strictly_increasing(entries: &[EpochEntry]) {
        for w in entries.windows(2) {
            assert!(
                w[0].epoch < w[1].epoch && w[0].start_offset < w[1].start_offset,
                "not strictly increasing: {entries:?}"
            );
        }
    }

    proptest! {
        #[test]
        fn the_cache_matches_kafkas_algorithm_and_stays_strictly_increasing(
            ops in proptest::collection::vec(arb_op(), 0..60)
        ) {
            let mut cache = LeaderEpochCache::in_memory();
            let mut model = Model::default();
            for op in &ops {
                apply(&mut cache, &mut model, op);
                assert_strictly_increasing(cache.entries());
                let expected = model.entries();
                prop_assert_eq!(cache.entries(), expected.as_slice(), "after {:?}", op);
                for requested in -1..22 {
                    prop_assert_eq!(
                        cache.end_offset_for(e(requested), o(150)),
                        model.end_offset_for(requested, 150),
                        "end_offset_for({}) after {:?}", requested, op
                    );
                }
                for offset in -1..112 {
                    prop_assert_eq!(cache.epoch_for_offset(o(offset)), model.epoch_for_offset(offset));
                }
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]

        #[test]
        fn the_checkpoint_always_holds_the_cache(
            ops in proptest::collection::vec(arb_op(), 0..25)
        ) {
            let dir = tempfile::tempdir().unwrap();
            let mut cache = LeaderEpochCache::open(dir.path()).unwrap();
            let mut model = Model::default();
            for op in &ops {
                apply(&mut cache, &mut model, op);
                let reopened = LeaderEpochCache::open(dir.path()).unwrap();
                prop_assert_eq!(reopened.entries(), cache.entries(), "after {:?}", op);
            }
        }
    }
}
