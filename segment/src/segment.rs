//! One segment: a `.log` file of batches and its offset, time and transaction indexes, named as
//! Kafka names them (`<20-digit base offset>.log`, `.index`, `.timeindex`, `.txnindex`).
//!
//! The lifecycle is in the types: an [`ActiveSegment`] is the single writer (`&mut self`) that
//! appends whole batches — the caller's buffer goes to the file as is, never copied — and keeps
//! its indexes; [`ActiveSegment::seal`] turns it, by value, into a [`SealedSegment`], which has no
//! append method. Both read through [`SegmentReader`]: file slices for an offset range, ready for
//! `sendfile`, and lookups by offset and by timestamp.
//!
//! Kafka's rules kept here (`LogSegment.java`): sparse index entries — one per batch whenever
//! more than `index.interval.bytes` were written since the last entry, mapping the batch's *last*
//! offset to its *start* position; the time index records the max timestamp seen so far;
//! truncation is batch-granular; roll on size, time, a full index or relative-offset overflow.
//!
//! The `.log` file goes through the [`Storage`] trait (io_uring, pwrite or
//! simulated); the indexes are memory-mapped regular files (`mirrorlog-index`). Indexes carry no
//! checksum: after an unclean shutdown they are rebuilt by [`ActiveSegment::recover`].

use crate::batch::{BatchError, RECORD_BATCH_OVERHEAD, RecordBatch, field, legacy};
use crate::io::{IoError, IoOp, OpenMode, Storage, StorageFile};
use crate::scan::{FileBatches, ScanError};
use bytes::Bytes;
use mirrorlog_index::{
    AbortedTxn, ErrorChain, FilePosition, Offset, OffsetIndex, TimeIndex, TimestampMs,
    TransactionIndex, segment_file,
};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The bytes of a legacy entry's header that a header read needs, up to the end of a v1
/// timestamp: the smallest entry (v0) is this long, so fewer bytes left are no whole entry.
const LEGACY_HEADER: usize = 12 + legacy::RECORD_OVERHEAD_V0;
const _: () = assert!(LEGACY_HEADER >= legacy::field::TIMESTAMP + 8);

/// `.log`
pub const LOG_SUFFIX: &str = ".log";
/// `.index`
pub const INDEX_SUFFIX: &str = ".index";
/// `.timeindex`
pub const TIME_INDEX_SUFFIX: &str = ".timeindex";
/// `.txnindex`
pub const TXN_INDEX_SUFFIX: &str = ".txnindex";
/// Added to a deleted segment's file names until they are removed (Kafka's
/// `LogFileUtils.DELETED_FILE_SUFFIX`); an open log removes any it finds.
pub const DELETED_SUFFIX: &str = ".deleted";

/// A deleted segment's files, renamed with [`DELETED_SUFFIX`] and not yet removed (Kafka's
/// `LogSegment.changeFileSuffixes("", ".deleted")`, then `deleteIfExists` once
/// `file.delete.delay.ms` has passed). The rename is durable (its directory synced) before
/// this exists, so a crash can never bring the segment back; a reader that had the `.log` open
/// (a fetch being served) keeps reading it, here and after the removal.
#[derive(Debug)]
#[must_use = "the renamed files stay until removed"]
pub struct DeletedSegmentFiles {
    log: PathBuf,
    indexes: [PathBuf; 3],
}

impl DeletedSegmentFiles {
    /// Removes the files (the `.log` through the storage backend, the indexes directly); a
    /// file already gone is no error (a later deletion of a segment of the same base offset
    /// renamed over it, and the first removal took it).
    ///
    /// # Errors
    /// A removal failed; the files not yet removed stay.
    pub fn remove(&self, storage: &dyn Storage) -> SegmentResult<()> {
        match storage.remove(&self.log) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e.into()),
            _ => {}
        }
        for p in &self.indexes {
            match std::fs::remove_file(p) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(mirrorlog_index::Error::Io {
                        op: "remove deleted index",
                        path: p.clone(),
                        source: e,
                    }
                    .into());
                }
                _ => {}
            }
        }
        Ok(())
    }
}

/// `path` with [`DELETED_SUFFIX`] added.
fn deleted_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(DELETED_SUFFIX);
    PathBuf::from(name)
}

/// What can go wrong in a segment operation. Every variant names the file.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum SegmentError {
    /// Reading or writing the `.log` file failed.
    #[error(transparent)]
    Io(#[from] IoError),
    /// An index, checkpoint or snapshot file operation failed.
    #[error(transparent)]
    Index(#[from] mirrorlog_index::Error),
    /// A batch in the `.log` file is corrupt.
    #[error("{}: {source}", path.display())]
    Corrupt {
        /// The `.log` file.
        path: PathBuf,
        /// What is wrong and where.
        #[source]
        source: BatchError,
    },
    /// The batches do not fit this segment (relative offset or position overflow): roll first.
    #[error("{}: {reason}", path.display())]
    DoesNotFit {
        /// The `.log` file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// An earlier write or sync of this segment failed, so what the file holds is unknown: no
    /// further append or flush is accepted (Kafka takes the log directory offline). Reopen the
    /// segment and [`ActiveSegment::recover`] it.
    #[error("{}: segment is unusable after an earlier I/O failure ({cause}); reopen and recover it", path.display())]
    Failed {
        /// The `.log` file.
        path: PathBuf,
        /// The first failure, with the causes its message leaves out
        /// ([`ErrorChain`]).
        cause: String,
    },
    /// Recording an aborted transaction in the transaction index failed after its ABORT marker
    /// was written to the log: the index now misses a transaction the log holds, so the segment
    /// is poisoned as by [`Failed`](Self::Failed) — no further append, flush, truncation or seal —
    /// and this is a storage failure of the data directory even when the disk is full (Kafka
    /// takes the log directory offline on any `IOException` of `updateTxnIndex`). Reopening
    /// recovers the segment, which rebuilds the entry from the marker.
    #[error(
        "recording the aborted transaction of the ABORT marker at offset {marker_offset} failed: {source}"
    )]
    TxnIndexAppend {
        /// The marker's offset (the entry's last offset).
        marker_offset: Offset,
        /// The transaction index's failure, naming the file.
        #[source]
        source: mirrorlog_index::Error,
    },
    /// The segment's files do not agree with each other.
    #[error("{}: {reason}", path.display())]
    Inconsistent {
        /// The file found inconsistent.
        path: PathBuf,
        /// Why.
        reason: String,
    },
}

/// The result of segment operations.
pub type SegmentResult<T> = Result<T, SegmentError>;

/// Segment settings, named after the Kafka topic configs they implement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SegmentConfig {
    /// `segment.bytes`: roll when the log would exceed this. Default 1 GiB; range
    /// 14 ..= i32::MAX (Kafka's bounds).
    pub segment_bytes_max: u32,
    /// `segment.index.bytes`: preallocated size of each index file. Default 10 MiB; range
    /// 24 ..= i32::MAX (must hold two time-index entries: the last slot is kept for the entry
    /// written on roll).
    pub index_bytes_max: u32,
    /// `index.interval.bytes`: bytes between sparse index entries. Default 4096; range
    /// 0 ..= i32::MAX (0 indexes every batch).
    pub index_interval_bytes: u32,
    /// `segment.ms`: roll when the segment's first batch is older than this. Default 7 days;
    /// range 1 ..= i64::MAX.
    pub segment_ms: i64,
    /// The jitter subtracted from `segment_ms` for this segment (Kafka draws it from
    /// `segment.jitter.ms`). Default 0; range 0 ..= `segment_ms - 1`.
    pub roll_jitter_ms: i64,
}

impl Default for SegmentConfig {
    fn default() -> Self {
        SegmentConfig {
            segment_bytes_max: 1 << 30,
            index_bytes_max: 10 << 20,
            index_interval_bytes: 4096,
            segment_ms: 7 * 24 * 60 * 60 * 1000,
            roll_jitter_ms: 0,
        }
    }
}

impl SegmentConfig {
    /// Rejects out-of-range settings with a message naming the setting.
    pub fn validate(&self) -> Result<(), String> {
        if !(14..=i32::MAX as u32).contains(&self.segment_bytes_max) {
            return Err(format!(
                "segment.bytes {} is outside 14..={}",
                self.segment_bytes_max,
                i32::MAX
            ));
        }
        if !(24..=i32::MAX as u32).contains(&self.index_bytes_max) {
            return Err(format!(
                "segment.index.bytes {} is outside 24..={}",
                self.index_bytes_max,
                i32::MAX
            ));
        }
        if self.index_interval_bytes > i32::MAX as u32 {
            return Err(format!(
                "index.interval.bytes {} is above {}",
                self.index_interval_bytes,
                i32::MAX
            ));
        }
        if self.segment_ms < 1 {
            return Err(format!("segment.ms {} must be at least 1", self.segment_ms));
        }
        if !(0..self.segment_ms).contains(&self.roll_jitter_ms) {
            return Err(format!(
                "segment jitter {} is outside 0..{} (segment.ms)",
                self.roll_jitter_ms, self.segment_ms
            ));
        }
        Ok(())
    }
}

/// A byte range of a segment's `.log` file: what a fetch sends, with `sendfile` where the
/// backend has a file descriptor.
#[derive(Clone)]
pub struct FileSlice {
    /// The open `.log` file.
    pub file: Arc<dyn StorageFile>,
    /// First byte.
    pub position: FilePosition,
    /// Length in bytes.
    pub length: u32,
}

impl FileSlice {
    /// Reads the slice into memory (for backends without a descriptor, and for tests).
    pub fn read_all(&self) -> Result<Bytes, IoError> {
        let v = self
            .file
            .read_exact_vec(self.length as usize, self.position.as_u64())?;
        Ok(Bytes::from(v))
    }

    /// Reads the slice into `buf`, which ends up exactly the slice's length. The buffer's memory
    /// is reused: a reader that keeps one buffer for every read pays no allocation and no
    /// zero-fill (only bytes beyond the buffer's previous length are zeroed before the read).
    ///
    /// # Errors
    /// The read failed or the file ended first; `buf`'s content is then unspecified.
    pub fn read_into(&self, buf: &mut Vec<u8>) -> Result<(), IoError> {
        buf.resize(self.length as usize, 0);
        self.file.read_exact_at(buf, self.position.as_u64())
    }
}

impl fmt::Debug for FileSlice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FileSlice")
            .field("file", &self.file.path())
            .field("position", &self.position)
            .field("length", &self.length)
            .finish()
    }
}

/// The result of a read: the slice, and the offset of the batch it starts with.
#[derive(Debug, Clone)]
pub struct FetchData {
    /// Bytes to send; may end inside a batch when the byte limit cut it (clients skip a partial
    /// trailing batch, as with Kafka); empty when the limit was 0.
    pub slice: FileSlice,
    /// Base offset of the first batch in the slice (Kafka's `LogOffsetMetadata` of the read,
    /// `translateOffset`'s batch `baseOffset`): a compressed legacy wrapper's is its first inner
    /// record's offset, found by decompressing it.
    pub first_batch_offset: Offset,
    /// The byte limit cut the first batch (Kafka's `firstEntryIncomplete`): the slice holds no
    /// whole batch. Only possible without `min_one_batch`, and not for a limit of 0 (an empty
    /// slice).
    pub first_entry_incomplete: bool,
}

/// Where a batch sits: what offset translation finds, from the batch's header alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchLocation {
    /// The batch's base offset; a legacy entry's is its offset, for a compressed wrapper the
    /// *last* inner offset (see [`RecordBatch::base_offset`]).
    pub base_offset: Offset,
    /// The batch's last offset.
    pub last_offset: Offset,
    /// Its position in the `.log` file.
    pub position: FilePosition,
    /// Its size in bytes.
    pub size: u32,
    /// Its max timestamp.
    pub max_timestamp: TimestampMs,
    /// A compressed legacy entry (a wrapper), whose true base offset takes decompressing it
    /// ([`RecordBatch::decompressed_base_offset`]).
    pub legacy_wrapper: bool,
}

/// Why a segment should roll before the next append.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RollReason {
    /// The append would push the log past `segment.bytes`.
    Size,
    /// The segment is older than `segment.ms` (minus jitter).
    Time,
    /// The offset index is full.
    OffsetIndexFull,
    /// The time index is full.
    TimeIndexFull,
    /// The append's last offset does not fit a relative (int32) offset from the base.
    OffsetOverflow,
}

/// What recovery found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecoveryReport {
    /// Valid batches kept.
    pub batches: u64,
    /// Bytes kept (the new file size).
    pub valid_bytes: u64,
    /// Bytes cut off the end.
    pub truncated_bytes: u64,
    /// Last offset of the last valid batch.
    pub last_offset: Option<Offset>,
    /// Why the scan stopped before the end of the file, with the position: a corrupt batch or a
    /// torn tail. `None` when the file ended cleanly, including at a zero-filled tail.
    pub stopped_by: Option<String>,
    /// Of `truncated_bytes`, how many were a tail of zeros: preallocated space past the last
    /// write (the direct-I/O mode preallocates `.log` files, and a crash leaves the zeros
    /// untrimmed). Cut like a torn tail, but a clean end, not a problem.
    pub zero_tail_bytes: u64,
}

/// The read side shared by active and sealed segments.
pub struct SegmentReader {
    dir: PathBuf,
    base_offset: Offset,
    log: Arc<dyn StorageFile>,
    offset_index: OffsetIndex,
    time_index: TimeIndex,
    txn_index: TransactionIndex,
    size: u32,
    config: SegmentConfig,
}

impl fmt::Debug for SegmentReader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Segment")
            .field("log", &self.log.path())
            .field("base_offset", &self.base_offset)
            .field("size", &self.size)
            .field("index_entries", &self.offset_index.entries())
            .field("time_index_entries", &self.time_index.entries())
            .finish()
    }
}

/// The segment file path for `base_offset` with `suffix` (e.g. [`LOG_SUFFIX`]).
pub fn segment_path(dir: &Path, base_offset: Offset, suffix: &str) -> PathBuf {
    segment_file(dir, base_offset, suffix)
}

impl SegmentReader {
    /// The segment's base offset.
    pub fn base_offset(&self) -> Offset {
        self.base_offset
    }
    /// The `.log` file's size in bytes.
    pub fn size_bytes(&self) -> u32 {
        self.size
    }
    /// The directory holding the files.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
    /// The `.log` file's path.
    pub fn log_path(&self) -> &Path {
        self.log.path()
    }
    /// The open `.log` file.
    pub fn log_file(&self) -> &Arc<dyn StorageFile> {
        &self.log
    }
    /// The offset index.
    pub fn offset_index(&self) -> &OffsetIndex {
        &self.offset_index
    }
    /// The time index.
    pub fn time_index(&self) -> &TimeIndex {
        &self.time_index
    }
    /// The transaction index (aborted transactions whose markers are in this segment).
    pub fn txn_index(&self) -> &TransactionIndex {
        &self.txn_index
    }
    /// The settings the segment was opened with.
    pub fn config(&self) -> &SegmentConfig {
        &self.config
    }

    fn corrupt(&self, source: BatchError) -> SegmentError {
        SegmentError::Corrupt {
            path: self.log.path().to_path_buf(),
            source,
        }
    }

    /// Reads the 61-byte header at `position` (None when fewer bytes remain: a partial batch),
    /// or a legacy entry's shorter one (magic 0 or 1: its offset is its last and base offset,
    /// see [`RecordBatch::base_offset`], its timestamp the max, −1 for v0).
    fn header_at(&self, position: u64) -> SegmentResult<Option<BatchLocation>> {
        let left = (self.size as u64).saturating_sub(position);
        if left < LEGACY_HEADER as u64 {
            return Ok(None);
        }
        let mut h = [0u8; RECORD_BATCH_OVERHEAD];
        let have = left.min(RECORD_BATCH_OVERHEAD as u64) as usize;
        self.log.read_exact_at(&mut h[..have], position)?;
        if matches!(h[field::MAGIC] as i8, legacy::MAGIC_V0 | legacy::MAGIC_V1) {
            return self.legacy_header(&h, position);
        }
        if have < RECORD_BATCH_OVERHEAD {
            return Ok(None);
        }
        let rd = |at: usize, n: usize| -> i64 {
            h[at..at + n]
                .iter()
                .fold(0i64, |acc, b| (acc << 8) | *b as i64)
        };
        let base = rd(field::BASE_OFFSET, 8);
        let length = i32::from_be_bytes(h[8..12].try_into().expect("4 bytes"));
        let delta = i32::from_be_bytes(
            h[field::LAST_OFFSET_DELTA..field::LAST_OFFSET_DELTA + 4]
                .try_into()
                .expect("4 bytes"),
        );
        let max_ts = rd(field::MAX_TIMESTAMP, 8);
        let min = (RECORD_BATCH_OVERHEAD - 12) as i32;
        if length < min {
            return Err(self.corrupt(BatchError::InvalidField {
                position,
                field: "batchLength",
                expected: format!(">= {min}"),
                found: length.to_string(),
            }));
        }
        if h[field::MAGIC] != 2 {
            return Err(self.corrupt(BatchError::InvalidField {
                position,
                field: "magic",
                expected: "0, 1 or 2".into(),
                found: (h[field::MAGIC] as i8).to_string(),
            }));
        }
        let size = 12 + length as u64;
        if position + size > self.size as u64 {
            return Ok(None);
        }
        Ok(Some(BatchLocation {
            base_offset: Offset(base),
            last_offset: Offset(base.saturating_add(delta as i64)),
            position: FilePosition(position as u32),
            size: size as u32,
            max_timestamp: TimestampMs(max_ts),
            legacy_wrapper: false,
        }))
    }

    /// [`header_at`](Self::header_at) for a legacy entry, whose first [`LEGACY_HEADER`] bytes
    /// (or more) are in `h`.
    fn legacy_header(&self, h: &[u8], position: u64) -> SegmentResult<Option<BatchLocation>> {
        let magic = h[legacy::field::MAGIC] as i8;
        let min = legacy::min_entry_length(magic).expect("a legacy magic");
        let offset = i64::from_be_bytes(h[0..8].try_into().expect("8 bytes"));
        let length = i32::from_be_bytes(h[8..12].try_into().expect("4 bytes"));
        if length < min as i32 {
            return Err(self.corrupt(BatchError::InvalidField {
                position,
                field: "size",
                expected: format!(">= {min}"),
                found: length.to_string(),
            }));
        }
        let size = 12 + length as u64;
        if position + size > self.size as u64 {
            return Ok(None);
        }
        let max_timestamp = if magic == legacy::MAGIC_V1 {
            TimestampMs(i64::from_be_bytes(
                h[legacy::field::TIMESTAMP..legacy::field::TIMESTAMP + 8]
                    .try_into()
                    .expect("8 bytes"),
            ))
        } else {
            TimestampMs::NONE
        };
        Ok(Some(BatchLocation {
            base_offset: Offset(offset),
            last_offset: Offset(offset),
            position: FilePosition(position as u32),
            size: size as u32,
            max_timestamp,
            legacy_wrapper: h[legacy::field::ATTRIBUTES] & legacy::attr::COMPRESSION_MASK != 0,
        }))
    }

    /// Kafka's `translateOffset`: the first batch at or after `start_position` whose last offset
    /// is ≥ `offset`. Reads only batch headers.
    pub fn translate_offset(
        &self,
        offset: Offset,
        start_position: FilePosition,
    ) -> SegmentResult<Option<BatchLocation>> {
        let mut pos = start_position.as_u64();
        while let Some(loc) = self.header_at(pos)? {
            if loc.last_offset >= offset {
                return Ok(Some(loc));
            }
            pos += loc.size as u64;
        }
        Ok(None)
    }

    /// The batch holding `offset` (or the first batch after it): index lookup, then a header
    /// scan of at most `index.interval.bytes` plus one batch.
    pub fn find_batch(&self, offset: Offset) -> SegmentResult<Option<BatchLocation>> {
        let (_, position) = self.offset_index.lookup(offset);
        self.translate_offset(offset, position)
    }

    /// Kafka's `LogSegment.read`: a slice starting at the batch that holds `start_offset`, of at
    /// most `max_bytes` (at least one whole batch when `min_one_batch`), ending before
    /// `max_position` (the byte bound of the high watermark or LSO; `None` = the end).
    pub fn read(
        &self,
        start_offset: Offset,
        max_bytes: u32,
        max_position: Option<FilePosition>,
        min_one_batch: bool,
    ) -> SegmentResult<Option<FetchData>> {
        let Some(first) = self.find_batch(start_offset)? else {
            return Ok(None);
        };
        let limit = max_position.map_or(self.size, |p| p.get().min(self.size));
        if first.position.get() >= limit {
            return Ok(None);
        }
        let max = if min_one_batch {
            max_bytes.max(first.size)
        } else {
            max_bytes
        };
        // A limit of 0 reads an empty slice at the batch (Kafka's `adjustedMaxSize == 0`): the
        // read ends here, and its position bounds the aborted transactions reported with it.
        let length = (limit - first.position.get()).min(max);
        // Kafka's `translateOffset` names the batch by its `baseOffset`, which for a legacy
        // wrapper decompresses it: only then is this read more than header reads. A wrapper
        // that does not decompress is served as it is, named by its own offset (Kafka's read
        // fails with it; the client's check fails it here).
        let first_batch_offset = if first.legacy_wrapper {
            self.read_batch(&first)?
                .decompressed_base_offset()
                .unwrap_or(first.base_offset)
        } else {
            first.base_offset
        };
        Ok(Some(FetchData {
            slice: FileSlice {
                file: self.log.clone(),
                position: first.position,
                length,
            },
            first_batch_offset,
            first_entry_incomplete: max > 0 && max < first.size,
        }))
    }

    /// Reads the whole batch at `loc`.
    pub fn read_batch(&self, loc: &BatchLocation) -> SegmentResult<RecordBatch> {
        let mut v = vec![0u8; loc.size as usize];
        self.log.read_exact_at(&mut v, loc.position.as_u64())?;
        RecordBatch::at(Bytes::from(v), loc.position.as_u64()).map_err(|e| self.corrupt(e))
    }

    /// Kafka's `findOffsetByTimestamp`: the first record at or after `starting_offset` whose
    /// timestamp is ≥ `timestamp`, as (offset, its timestamp).
    pub fn find_offset_by_timestamp(
        &self,
        timestamp: TimestampMs,
        starting_offset: Offset,
    ) -> SegmentResult<Option<(Offset, TimestampMs)>> {
        let (_, ts_offset) = self.time_index.lookup(timestamp);
        let (_, mut pos) = self.offset_index.lookup(ts_offset.max(starting_offset));
        while let Some(loc) = self.header_at(pos.as_u64())? {
            pos = FilePosition(pos.get() + loc.size);
            if loc.max_timestamp < timestamp || loc.last_offset < starting_offset {
                continue;
            }
            let batch = self.read_batch(&loc)?;
            // Offsets and timestamps only: a compressed batch is streamed, not inflated whole.
            for r in batch.record_metas().map_err(|e| self.corrupt(e))? {
                let r = r.map_err(|e| self.corrupt(e))?;
                if r.timestamp >= timestamp && r.offset >= starting_offset {
                    return Ok(Some((r.offset, r.timestamp)));
                }
            }
        }
        Ok(None)
    }

    /// Every batch of the segment, validated, in order (for replay and inspection).
    pub fn batches(&self) -> FileBatches<'_> {
        FileBatches::new(&*self.log, 0, self.size as u64)
    }

    /// The largest timestamp in the segment and the last offset of the batch that has it,
    /// starting from the time index's last entry and scanning the batches after it.
    fn load_largest_timestamp(&self) -> SegmentResult<(TimestampMs, Offset)> {
        let (mut max_ts, mut max_off) = self.time_index.last_entry();
        let (_, pos) = self.offset_index.lookup(max_off);
        let mut pos = pos.as_u64();
        while let Some(loc) = self.header_at(pos)? {
            if loc.max_timestamp > max_ts {
                max_ts = loc.max_timestamp;
                max_off = loc.last_offset;
            }
            pos += loc.size as u64;
        }
        Ok((max_ts, max_off))
    }

    /// The offset after the last batch (the base offset when empty), found from the last index
    /// entry and a header scan.
    fn load_next_offset(&self) -> SegmentResult<Offset> {
        let (mut next, pos) = self.offset_index.lookup(Offset(i64::MAX));
        if self.offset_index.is_empty() {
            next = self.base_offset;
        }
        let mut pos = pos.as_u64();
        while let Some(loc) = self.header_at(pos)? {
            next = loc.last_offset.next();
            pos += loc.size as u64;
        }
        Ok(next)
    }

    /// Deletes the segment's files (`.log` through the storage backend, the indexes directly).
    fn delete_files(self, storage: &dyn Storage) -> SegmentResult<()> {
        let SegmentReader {
            dir,
            log,
            offset_index,
            time_index,
            txn_index,
            ..
        } = self;
        let path = log.path().to_path_buf();
        drop(log);
        storage.remove(&path)?;
        // A removal that is not durable could bring truncated data back after a crash.
        storage.sync_dir(&dir)?;
        offset_index.delete()?;
        time_index.delete()?;
        txn_index.delete()?;
        Ok(())
    }

    /// Renames the segment's files with [`DELETED_SUFFIX`]: the `.log` first, then its
    /// directory is synced (from then on a crash cannot bring the segment back: an open log
    /// removes `.deleted` files), then the indexes, whose old names an open removes too once
    /// their `.log` is gone.
    fn rename_deleted(self, storage: &dyn Storage) -> SegmentResult<DeletedSegmentFiles> {
        let SegmentReader {
            dir,
            log,
            mut offset_index,
            mut time_index,
            mut txn_index,
            ..
        } = self;
        let path = log.path().to_path_buf();
        drop(log);
        let renamed = deleted_path(&path);
        storage.rename(&path, &renamed)?;
        storage.sync_dir(&dir)?;
        let indexes = [
            deleted_path(offset_index.path()),
            deleted_path(time_index.path()),
            deleted_path(txn_index.path()),
        ];
        offset_index.rename_to(&indexes[0])?;
        time_index.rename_to(&indexes[1])?;
        txn_index.rename_to(&indexes[2])?;
        Ok(DeletedSegmentFiles {
            log: renamed,
            indexes,
        })
    }

    /// The largest batch max timestamp in the segment, from the time index (sealed segments
    /// hold the final max-timestamp entry) and a scan of the batches after its last entry.
    pub fn largest_timestamp(&self) -> SegmentResult<TimestampMs> {
        Ok(self.load_largest_timestamp()?.0)
    }

    /// [`largest_timestamp`](Self::largest_timestamp) and the last offset of the batch that
    /// holds it (−1 timestamp and the base offset for an empty segment).
    pub fn largest_timestamp_and_offset(&self) -> SegmentResult<(TimestampMs, Offset)> {
        self.load_largest_timestamp()
    }

    /// Checks the indexes against their own rules and against the log: sizes, order, that the
    /// last offset-index entry points at a batch whose last offset it names, and that the last
    /// time-index and transaction-index entries name offsets the log holds.
    pub fn sanity_check(&self) -> SegmentResult<()> {
        self.offset_index.sanity_check()?;
        self.time_index.sanity_check()?;
        self.txn_index.sanity_check()?;
        if !self.time_index.is_empty() {
            // Its last entry must name an offset the log holds (a damaged entry past the log
            // would make the next append's entry go backwards).
            let (_, offset) = self.time_index.last_entry();
            if self.find_batch(offset)?.is_none() {
                return Err(SegmentError::Inconsistent {
                    path: self.time_index.path().to_path_buf(),
                    reason: format!(
                        "last entry names offset {offset}, which the log does not hold"
                    ),
                });
            }
        }
        if let Some(offset) = self.txn_index.last_offset() {
            // Its last entry names an ABORT marker: the log must hold it. One past the log (a
            // damaged file, or one a crash left ahead of its `.log`) would make the next abort's
            // entry go backwards. Kafka's check looks only below the segment's start.
            if self.find_batch(offset)?.is_none() {
                return Err(SegmentError::Inconsistent {
                    path: self.txn_index.path().to_path_buf(),
                    reason: format!(
                        "last entry names marker offset {offset}, which the log does not hold"
                    ),
                });
            }
        }
        if let Some((offset, position)) = self
            .offset_index
            .entries()
            .checked_sub(1)
            .and_then(|i| self.offset_index.entry(i))
        {
            match self.header_at(position.as_u64())? {
                Some(loc) if loc.last_offset == offset => {}
                other => {
                    return Err(SegmentError::Inconsistent {
                        path: self.offset_index.path().to_path_buf(),
                        reason: format!(
                            "last entry ({offset}, {position}) does not name a batch ending at that offset: found {other:?}"
                        ),
                    });
                }
            }
        }
        Ok(())
    }
}

/// A segment being appended to: the single writer of its files.
#[derive(Debug)]
pub struct ActiveSegment {
    r: SegmentReader,
    storage: Arc<dyn Storage>,
    next_offset: Offset,
    bytes_since_last_index_entry: u32,
    max_timestamp_so_far: TimestampMs,
    offset_of_max_timestamp_so_far: Offset,
    /// The first batch's max timestamp, which segment.ms counts from (Kafka's
    /// `rollingBasedTimestamp`).
    rolling_based_timestamp: Option<TimestampMs>,
    created_ms: i64,
    /// Set by the first failed write or sync; see [`SegmentError::Failed`].
    failed: Option<String>,
    /// Scratch for `append_inner`: each appended batch's last offset, max timestamp and size,
    /// kept between appends so that an append allocates nothing.
    metas: Vec<(Offset, TimestampMs, u32)>,
}

impl std::ops::Deref for ActiveSegment {
    type Target = SegmentReader;
    fn deref(&self) -> &SegmentReader {
        &self.r
    }
}

/// A segment that no longer takes appends: indexes trimmed to their entries.
#[derive(Debug)]
pub struct SealedSegment {
    r: SegmentReader,
    storage: Arc<dyn Storage>,
    next_offset: Offset,
    /// When the segment was created or loaded (Kafka's `LogSegment.created`), kept for
    /// [`reopen_active`](Self::reopen_active).
    created_ms: i64,
}

impl std::ops::Deref for SealedSegment {
    type Target = SegmentReader;
    fn deref(&self) -> &SegmentReader {
        &self.r
    }
}

fn open_indexes(
    dir: &Path,
    base_offset: Offset,
    config: &SegmentConfig,
    writable: bool,
) -> SegmentResult<(OffsetIndex, TimeIndex, TransactionIndex)> {
    let max = config.index_bytes_max as u64;
    let mut oi = OffsetIndex::open(
        segment_path(dir, base_offset, INDEX_SUFFIX),
        base_offset,
        max,
        writable,
    )?;
    let mut ti = TimeIndex::open(
        segment_path(dir, base_offset, TIME_INDEX_SUFFIX),
        base_offset,
        max,
        writable,
    )?;
    if writable {
        // Never below the entries already there: `segment.index.bytes` may have been lowered
        // since the files were written (the segment then rolls at its next append).
        let keep = |entries: usize, size: usize| max.max((entries * size) as u64);
        oi.resize(keep(
            oi.entries(),
            mirrorlog_index::offset_index::OFFSET_ENTRY_SIZE,
        ))?;
        ti.resize(keep(
            ti.entries(),
            mirrorlog_index::time_index::TIME_ENTRY_SIZE,
        ))?;
    }
    let txn = TransactionIndex::open(
        segment_path(dir, base_offset, TXN_INDEX_SUFFIX),
        base_offset,
    )?;
    Ok((oi, ti, txn))
}

/// Opens an existing segment's files: the `.log` through the storage backend in `mode`, the
/// indexes mapped writable (given room again) or read-only.
fn open_reader(
    storage: &dyn Storage,
    dir: &Path,
    base_offset: Offset,
    config: SegmentConfig,
    mode: OpenMode,
) -> SegmentResult<SegmentReader> {
    config
        .validate()
        .map_err(|reason| SegmentError::DoesNotFit {
            path: dir.to_path_buf(),
            reason,
        })?;
    let log = storage.open(&segment_path(dir, base_offset, LOG_SUFFIX), mode)?;
    let size = log_size(&*log)?;
    let writable = mode != OpenMode::Read;
    let (offset_index, time_index, txn_index) = open_indexes(dir, base_offset, &config, writable)?;
    Ok(SegmentReader {
        dir: dir.to_path_buf(),
        base_offset,
        log,
        offset_index,
        time_index,
        txn_index,
        size,
        config,
    })
}

impl ActiveSegment {
    /// Creates a new, empty segment at `base_offset` in `dir`. Fails if its `.log` exists.
    /// The directory entry is synced so the new file survives a crash.
    pub fn create(
        storage: Arc<dyn Storage>,
        dir: &Path,
        base_offset: Offset,
        config: SegmentConfig,
        now_ms: i64,
    ) -> SegmentResult<ActiveSegment> {
        // A new, empty file: the same opening as an existing one, created instead.
        let r = open_reader(&*storage, dir, base_offset, config, OpenMode::CreateNew)?;
        storage.sync_dir(dir)?;
        Ok(ActiveSegment::empty_state(r, storage, now_ms, None))
    }

    /// Opens an existing segment for appending (the last segment of a log on restart). Trusts
    /// the indexes after their sanity check; after an unclean shutdown call
    /// [`recover`](Self::recover) instead of trusting them. `now_ms` is the load time, which
    /// its `segment.ms` clock counts from (Kafka's `LogSegment.created`).
    pub fn open(
        storage: Arc<dyn Storage>,
        dir: &Path,
        base_offset: Offset,
        config: SegmentConfig,
        now_ms: i64,
    ) -> SegmentResult<ActiveSegment> {
        let r = open_reader(&*storage, dir, base_offset, config, OpenMode::ReadWrite)?;
        ActiveSegment::from_reader(r, storage, now_ms)
    }

    /// Opens an existing segment that is about to be [`recover`](Self::recover)ed: nothing is
    /// read (recovery rebuilds every piece of append state), so opening costs no scan. Until
    /// `recover` runs, appends and flushes are refused.
    pub fn open_for_recovery(
        storage: Arc<dyn Storage>,
        dir: &Path,
        base_offset: Offset,
        config: SegmentConfig,
        now_ms: i64,
    ) -> SegmentResult<ActiveSegment> {
        let r = open_reader(&*storage, dir, base_offset, config, OpenMode::ReadWrite)?;
        Ok(ActiveSegment::empty_state(
            r,
            storage,
            now_ms,
            Some("opened for recovery and not yet recovered".into()),
        ))
    }

    /// An active segment whose append state is that of an empty segment (a new one, or one
    /// about to be recovered).
    fn empty_state(
        r: SegmentReader,
        storage: Arc<dyn Storage>,
        now_ms: i64,
        failed: Option<String>,
    ) -> ActiveSegment {
        let base_offset = r.base_offset;
        ActiveSegment {
            r,
            storage,
            next_offset: base_offset,
            bytes_since_last_index_entry: 0,
            max_timestamp_so_far: TimestampMs::NONE,
            offset_of_max_timestamp_so_far: base_offset,
            rolling_based_timestamp: None,
            created_ms: now_ms,
            failed,
            metas: Vec::new(),
        }
    }

    fn from_reader(
        r: SegmentReader,
        storage: Arc<dyn Storage>,
        now_ms: i64,
    ) -> SegmentResult<ActiveSegment> {
        let next_offset = r.load_next_offset()?;
        let (max_ts, max_off) = r.load_largest_timestamp()?;
        let rolling = r.header_at(0)?.map(|l| l.max_timestamp);
        Ok(ActiveSegment {
            r,
            storage,
            next_offset,
            bytes_since_last_index_entry: 0,
            max_timestamp_so_far: max_ts,
            offset_of_max_timestamp_so_far: max_off,
            rolling_based_timestamp: rolling,
            created_ms: now_ms,
            failed: None,
            metas: Vec::new(),
        })
    }

    /// The offset the next batch must start at or after.
    pub fn next_offset(&self) -> Offset {
        self.next_offset
    }

    /// The largest batch max timestamp appended so far, and the last offset of its batch.
    pub fn max_timestamp_so_far(&self) -> (TimestampMs, Offset) {
        (
            self.max_timestamp_so_far,
            self.offset_of_max_timestamp_so_far,
        )
    }

    /// Records an aborted transaction whose ABORT marker this segment holds (Kafka's
    /// `LogSegment.updateTxnIndex`).
    ///
    /// The marker is already in the log when this runs, so a failure cannot be undone: the
    /// segment is poisoned (see [`SegmentError::TxnIndexAppend`]) — nothing more is appended or
    /// flushed, so a recovery point taken from a flush never passes the marker and the next
    /// open's recovery rebuilds the entry. Running out of space is no exception here, unlike a
    /// failed `.log` write, which the segment cuts off again.
    pub fn append_aborted_txn(&mut self, txn: AbortedTxn) -> SegmentResult<()> {
        self.check_usable()?;
        if let Err(source) = self.r.txn_index.append(txn) {
            let e = SegmentError::TxnIndexAppend {
                marker_offset: txn.last_offset,
                source,
            };
            self.failed
                .get_or_insert_with(|| ErrorChain(&e).to_string());
            return Err(e);
        }
        Ok(())
    }

    /// Kafka's `shouldRoll`: whether appending `incoming_bytes` whose largest offset is
    /// `max_offset` and largest timestamp `max_timestamp` needs a new segment first.
    /// Takes a topic config change (IncrementalAlterConfigs): the roll limits
    /// (`segment.bytes`, `segment.ms` and its jitter) and `index.interval.bytes` apply from the
    /// next append, as Kafka's roll decision reads the log's current config. The index files'
    /// size (`segment.index.bytes`) stays as the segment was created with; the next segment
    /// takes the new one.
    pub fn update_config(&mut self, c: &SegmentConfig) {
        let cur = &mut self.r.config;
        cur.segment_bytes_max = c.segment_bytes_max;
        cur.segment_ms = c.segment_ms;
        cur.roll_jitter_ms = c.roll_jitter_ms;
        cur.index_interval_bytes = c.index_interval_bytes;
    }

    /// How many batches one append may still carry: each may add an entry to each index
    /// (see `append`), so a run of batches must not be longer than this.
    pub fn index_room(&self) -> usize {
        self.r
            .offset_index
            .free_slots()
            .min(self.r.time_index.free_slots())
    }

    pub fn should_roll(
        &self,
        incoming_bytes: u32,
        max_offset: Offset,
        max_timestamp: TimestampMs,
        now_ms: i64,
    ) -> Option<RollReason> {
        let c = &self.r.config;
        if self.r.size as u64 + incoming_bytes as u64 > c.segment_bytes_max as u64 {
            return Some(RollReason::Size);
        }
        if self.r.size > 0 {
            let waited = match self.rolling_based_timestamp {
                Some(ts) if ts.get() >= 0 => max_timestamp.get().saturating_sub(ts.get()),
                _ => now_ms.saturating_sub(self.created_ms),
            };
            if waited > c.segment_ms - c.roll_jitter_ms {
                return Some(RollReason::Time);
            }
        }
        if self.r.offset_index.is_full() {
            return Some(RollReason::OffsetIndexFull);
        }
        if self.r.time_index.is_full() {
            return Some(RollReason::TimeIndexFull);
        }
        if max_offset.relative_to(self.r.base_offset).is_none() {
            return Some(RollReason::OffsetOverflow);
        }
        None
    }

    /// Appends whole batches (one or more, back to back). The buffer is written to the file as
    /// is — no copy — then the sparse indexes are updated batch by batch. Batches must already
    /// be validated by the caller; here they are framed and their header checked (cheap), and
    /// their offsets must start at or after [`next_offset`](Self::next_offset) and increase.
    /// Legacy entries (magic 0 and 1, a replica's copy of an older Kafka's) are taken too,
    /// indexed by their offset as recovery indexes them.
    /// Not durable until [`flush`](Self::flush) (or use [`append_durable`](Self::append_durable)).
    pub fn append(&mut self, batches: Bytes) -> SegmentResult<()> {
        self.append_inner(batches, false)
    }

    /// [`append`](Self::append), durable on return: the write and an `fdatasync` go down in one
    /// submission (linked on io_uring).
    pub fn append_durable(&mut self, batches: Bytes) -> SegmentResult<()> {
        self.append_inner(batches, true)
    }

    /// Fails with [`SegmentError::Failed`] once an earlier write or sync of the segment failed
    /// (or recording an aborted transaction did): what its files hold is then unknown.
    ///
    /// # Errors
    /// The segment is poisoned.
    pub fn check_usable(&self) -> SegmentResult<()> {
        match &self.failed {
            None => Ok(()),
            Some(cause) => Err(SegmentError::Failed {
                path: self.r.log.path().to_path_buf(),
                cause: cause.clone(),
            }),
        }
    }

    /// A failed log write at `position`. Running out of space while writing (not syncing) is
    /// the one failure the segment survives: the bytes it may have written past `position` are
    /// cut off again, so the file holds exactly what it held before, and a later append can
    /// succeed once space returns (Kafka would take the whole log directory offline instead).
    /// Any other failure — or a failed cut — poisons the segment (see [`SegmentError::Failed`]).
    fn write_failed(&mut self, e: IoError, position: u32) -> SegmentError {
        let survivable = e.op == IoOp::WriteAt
            && e.is_no_space()
            && self.r.log.set_len(u64::from(position)).is_ok();
        if !survivable {
            self.failed.get_or_insert_with(|| e.to_string());
        }
        SegmentError::Io(e)
    }

    /// Runs a write or sync; a failure poisons the segment.
    fn io<T>(&mut self, f: impl FnOnce(&SegmentReader) -> Result<T, IoError>) -> SegmentResult<T> {
        f(&self.r).map_err(|e| {
            self.failed.get_or_insert_with(|| e.to_string());
            SegmentError::Io(e)
        })
    }

    fn append_inner(&mut self, batches: Bytes, durable: bool) -> SegmentResult<()> {
        self.check_usable()?;
        // Per-append work stays allocation-free: the path is copied only into an error, and the
        // batches' index inputs go to a vector kept across appends.
        let mut metas = std::mem::take(&mut self.metas);
        metas.clear();
        let path = || self.r.log.path().to_path_buf();
        let len = batches.len();
        let new_size = self.r.size as u64 + len as u64;
        if new_size > i32::MAX as u64 {
            return Err(SegmentError::DoesNotFit {
                path: path(),
                reason: format!(
                    "{len} bytes at position {} would pass the 2 GiB position limit",
                    self.r.size
                ),
            });
        }
        // Frame and check every batch before a byte is written.
        let mut expected = self.next_offset;
        let framed = crate::batch::Batches::at(batches.clone(), self.r.size as u64);
        for b in framed.verify(false).legacy(true) {
            let b = b.map_err(|source| SegmentError::Corrupt {
                path: path(),
                source,
            })?;
            b.validate_header()
                .map_err(|source| SegmentError::Corrupt {
                    path: path(),
                    source,
                })?;
            debug_assert_eq!(
                b.validate_stored(),
                Ok(()),
                "append of an unvalidated batch"
            );
            assert!(
                b.base_offset() >= expected,
                "{}: batch at offset {} appended after offset {}",
                path().display(),
                b.base_offset(),
                expected
            );
            if b.last_offset().relative_to(self.r.base_offset).is_none() {
                return Err(SegmentError::DoesNotFit {
                    path: path(),
                    reason: format!(
                        "offset {} is not within i32 of base offset {}: roll first",
                        b.last_offset(),
                        self.r.base_offset
                    ),
                });
            }
            expected = b.next_offset();
            metas.push((b.last_offset(), b.max_timestamp(), b.size_bytes() as u32));
        }
        let consumed: usize = metas.iter().map(|m| m.2 as usize).sum();
        if consumed != len {
            return Err(SegmentError::Corrupt {
                path: path(),
                source: BatchError::Truncated {
                    position: self.r.size as u64 + consumed as u64,
                    needed: len - consumed,
                    available: len - consumed,
                },
            });
        }
        if metas.is_empty() {
            return Ok(());
        }
        let position = self.r.size;
        // Slots for the index entries this append may add (one per batch at most), before a byte
        // of it is written: an index filling up half-way would leave the log ahead of the
        // segment's offsets. Callers split a run where `index_room` ends.
        self.r.offset_index.check_room(metas.len())?;
        self.r.time_index.check_room(metas.len())?;
        // Room for those entries on disk, before a byte is written: on a full disk the append
        // fails here, cleanly, instead of faulting on a mapped page.
        self.r.offset_index.reserve(metas.len())?;
        self.r.time_index.reserve(metas.len())?;
        let written = if durable {
            self.r.log.write_all_at(&[batches], position as u64, true)
        } else {
            self.r.log.write_at(batches, position as u64)
        };
        if let Err(e) = written {
            return Err(self.write_failed(e, position));
        }
        self.r.size = new_size as u32;
        if self.rolling_based_timestamp.is_none() {
            self.rolling_based_timestamp = Some(metas[0].1);
        }
        let mut pos = position;
        for &(last_offset, max_ts, size) in &metas {
            self.index_batch(last_offset, max_ts, pos)?;
            pos += size;
            self.bytes_since_last_index_entry += size;
        }
        self.metas = metas;
        self.next_offset = expected;
        Ok(())
    }

    /// Kafka's per-batch index rule, shared by append and recovery.
    fn index_batch(
        &mut self,
        last_offset: Offset,
        max_ts: TimestampMs,
        position: u32,
    ) -> SegmentResult<()> {
        if max_ts > self.max_timestamp_so_far {
            self.max_timestamp_so_far = max_ts;
            self.offset_of_max_timestamp_so_far = last_offset;
        }
        if self.bytes_since_last_index_entry > self.r.config.index_interval_bytes {
            self.r
                .offset_index
                .append(last_offset, FilePosition(position))?;
            self.r.time_index.maybe_append(
                self.max_timestamp_so_far,
                self.offset_of_max_timestamp_so_far,
                false,
            )?;
            self.bytes_since_last_index_entry = 0;
        }
        Ok(())
    }

    /// Makes everything appended so far durable: `fdatasync` of the log, `msync` of the indexes.
    ///
    /// Any failure poisons the segment (see [`SegmentError::Failed`]), an index's as much as the
    /// log's: after a failed `msync` or `fsync` the kernel may have dropped the dirty pages, so a
    /// later successful one would prove nothing (Kafka's `LogSegment.flush` reports any
    /// `IOException` to the `LogDirFailureChannel`).
    pub fn flush(&mut self) -> SegmentResult<()> {
        self.sync_log()?;
        let r = &mut self.r;
        let synced = r
            .offset_index
            .flush()
            .and_then(|()| r.time_index.flush())
            .and_then(|()| r.txn_index.flush());
        self.poisoning(synced)
    }

    /// Passes `r` through; an error poisons the segment.
    fn poisoning<T, E: Into<SegmentError>>(&mut self, r: Result<T, E>) -> SegmentResult<T> {
        r.map_err(|e| {
            let e = e.into();
            self.failed
                .get_or_insert_with(|| ErrorChain(&e).to_string());
            e
        })
    }

    /// Makes the appended batches durable (`fdatasync` of the `.log`) but not the indexes: enough
    /// for a segment that a reopen after a crash always scans and re-indexes (the engine's active
    /// segment). [`flush`](Self::flush) syncs the indexes too.
    pub fn sync_log(&mut self) -> SegmentResult<()> {
        self.check_usable()?;
        self.io(|r| r.log.sync_data())
    }

    /// Kafka's `LogSegment.truncateTo`: removes every batch whose last offset is ≥ `offset`
    /// (batch-granular: a batch holding `offset` goes whole), truncates the indexes to match and
    /// returns the bytes removed. A segment left empty restarts its `segment.ms` clock at
    /// `now_ms`, as Kafka's sets `created` to now (the clock batches without timestamps roll by).
    pub fn truncate_to(&mut self, offset: Offset, now_ms: i64) -> SegmentResult<u64> {
        self.check_usable()?;
        let loc = self.r.find_batch(offset)?;
        self.r.offset_index.truncate_to(offset)?;
        self.r.time_index.truncate_to(offset)?;
        self.r.txn_index.truncate_to(offset)?;
        let Some(loc) = loc else {
            if self.r.size == 0 {
                self.created_ms = now_ms;
            }
            return Ok(0);
        };
        let removed = (self.r.size - loc.position.get()) as u64;
        // Durable at once: a crash must not bring the removed batches back.
        self.io(|r| {
            r.log
                .set_len(loc.position.as_u64())
                .and_then(|()| r.log.sync_data())
        })?;
        self.r.size = loc.position.get();
        self.bytes_since_last_index_entry = 0;
        self.next_offset = if self.r.size == 0 {
            self.r.base_offset
        } else {
            self.r.load_next_offset()?
        };
        let (ts, off) = if self.r.size == 0 {
            (TimestampMs::NONE, self.r.base_offset)
        } else {
            self.r.load_largest_timestamp()?
        };
        self.max_timestamp_so_far = ts;
        self.offset_of_max_timestamp_so_far = off;
        if self.r.size == 0 {
            self.created_ms = now_ms;
            self.rolling_based_timestamp = None;
        }
        Ok(removed)
    }

    /// Kafka's `LogSegment.recover`: drops the indexes, scans every batch from the start,
    /// checking its CRC and header, rebuilds the offset and time indexes with the interval rule,
    /// and truncates the file at the first batch that is corrupt or torn, or is a control batch
    /// whose control record does not parse. `on_batch` sees each
    /// valid batch in order (the engine rebuilds producer state, the epoch cache and the
    /// transaction index from them).
    pub fn recover(
        &mut self,
        on_batch: impl FnMut(&mut ActiveSegment, &RecordBatch) -> SegmentResult<()>,
    ) -> SegmentResult<RecoveryReport> {
        let r = self.recover_inner(on_batch);
        if let Err(e) = &r {
            // Half-rebuilt (the size is the whole file, the offsets partly rebuilt): no append
            // may land on it.
            self.failed = Some(format!("recovery failed: {}", ErrorChain(e)));
        }
        r
    }

    fn recover_inner(
        &mut self,
        mut on_batch: impl FnMut(&mut ActiveSegment, &RecordBatch) -> SegmentResult<()>,
    ) -> SegmentResult<RecoveryReport> {
        self.failed = None;
        self.r.offset_index.truncate()?;
        self.r.time_index.truncate()?;
        self.r.txn_index.reset()?;
        self.r.size = log_size(&*self.r.log)?;
        self.bytes_since_last_index_entry = 0;
        self.max_timestamp_so_far = TimestampMs::NONE;
        self.offset_of_max_timestamp_so_far = self.r.base_offset;
        self.next_offset = self.r.base_offset;
        self.rolling_based_timestamp = None;
        let file = self.r.log.clone();
        let end = self.r.size as u64;
        let mut scan = FileBatches::new(&*file, 0, end);
        let mut report = RecoveryReport {
            batches: 0,
            valid_bytes: 0,
            truncated_bytes: 0,
            last_offset: None,
            stopped_by: None,
            zero_tail_bytes: 0,
        };
        for item in scan.by_ref() {
            let batch = match item {
                Ok(b) => b,
                Err(ScanError::Io(e)) => return Err(e.into()),
                Err(ScanError::Batch(e)) => {
                    report.stopped_by = Some(e.to_string());
                    break;
                }
            };
            if batch.base_offset() < self.next_offset
                || batch
                    .last_offset()
                    .relative_to(self.r.base_offset)
                    .is_none()
            {
                report.stopped_by = Some(format!(
                    "batch at position {} has offsets {}..={}, out of order after {} in a segment based at {}",
                    batch.position(),
                    batch.base_offset(),
                    batch.last_offset(),
                    self.next_offset,
                    self.r.base_offset
                ));
                break;
            }
            // A control batch whose control record does not parse (its CRC can match: the
            // writer wrote it so) ends the valid part too, as Kafka's `LogSegment.recover` stops
            // at the `InvalidRecordException` its marker raises. The batch goes with the rest
            // (Kafka counts its bytes valid before it reads the marker, and keeps it): a batch
            // kept here would be one producer state cannot be rebuilt from at the next open.
            if let Err(e) = batch.control_record() {
                report.stopped_by = Some(e.to_string());
                break;
            }
            if self.rolling_based_timestamp.is_none() {
                self.rolling_based_timestamp = Some(batch.max_timestamp());
            }
            let position = batch.position() as u32;
            self.index_batch(batch.last_offset(), batch.max_timestamp(), position)?;
            self.bytes_since_last_index_entry += batch.size_bytes() as u32;
            self.next_offset = batch.next_offset();
            report.batches += 1;
            report.valid_bytes = batch.position() + batch.size_bytes() as u64;
            report.last_offset = Some(batch.last_offset());
            on_batch(self, &batch)?;
        }
        if report.stopped_by.is_none()
            && let Some(t) = scan.truncated_tail()
        {
            report.stopped_by = Some(format!(
                "torn batch at position {}: {} bytes present{}",
                t.position,
                t.available,
                t.needed.map_or(String::new(), |n| format!(" of {n}"))
            ));
        }
        report.truncated_bytes = end - report.valid_bytes;
        if report.truncated_bytes > 0 && all_zero(&*file, report.valid_bytes, end)? {
            // Preallocated space never written (a direct-I/O segment after a crash): the log
            // ends cleanly where the zeros start.
            report.zero_tail_bytes = report.truncated_bytes;
            report.stopped_by = None;
        }
        if report.truncated_bytes > 0 {
            self.r.log.set_len(report.valid_bytes)?;
            self.r.log.sync_data()?;
            self.r.size = report.valid_bytes as u32;
        }
        // As Kafka's `recover` ends: the entry a clean close writes, the largest timestamp of
        // the valid batches (absorbed when an interval entry already holds it).
        self.r.time_index.maybe_append(
            self.max_timestamp_so_far,
            self.offset_of_max_timestamp_so_far,
            true,
        )?;
        if let Some(reason) = &report.stopped_by {
            tracing::warn!(
                log = %self.r.log.path().display(),
                truncated_bytes = report.truncated_bytes,
                "recovery truncated the segment: {reason}"
            );
        }
        Ok(report)
    }

    /// Deletes the segment's files.
    pub fn delete(self) -> SegmentResult<()> {
        let ActiveSegment { r, storage, .. } = self;
        r.delete_files(&*storage)
    }

    /// Deletes the segment by renaming its files with [`DELETED_SUFFIX`], durably; the caller
    /// removes them later ([`DeletedSegmentFiles::remove`]).
    pub fn rename_deleted(self) -> SegmentResult<DeletedSegmentFiles> {
        let ActiveSegment { r, storage, .. } = self;
        r.rename_deleted(&*storage)
    }

    /// Stops appends: the final max-timestamp entry goes into the time index, both indexes are
    /// trimmed to their entries, and everything is made durable.
    ///
    /// [`prepare_seal`](Self::prepare_seal) then [`into_sealed`](Self::into_sealed): a caller
    /// that must keep the segment when sealing fails (the engine's roll) calls the two itself.
    pub fn seal(mut self) -> SegmentResult<SealedSegment> {
        self.prepare_seal()?;
        Ok(self.into_sealed())
    }

    /// Everything of [`seal`](Self::seal) that can fail, in place: the final max-timestamp
    /// entry, a [`flush`](Self::flush), the end of appends to the `.log` and the indexes trimmed
    /// to their entries. A failure poisons the segment (see [`SegmentError::Failed`]): it is
    /// then neither sealed nor usable, and the caller still holds it, to refuse its use until it
    /// is reopened and recovered. On success only [`into_sealed`](Self::into_sealed) may follow.
    pub fn prepare_seal(&mut self) -> SegmentResult<()> {
        self.check_usable()?;
        let r = &mut self.r;
        let appended = r.time_index.maybe_append(
            self.max_timestamp_so_far,
            self.offset_of_max_timestamp_so_far,
            true,
        );
        self.poisoning(appended)?;
        self.flush()?;
        self.io(|r| r.log.finish_appends())?;
        let r = &mut self.r;
        let trimmed = r
            .offset_index
            .trim_to_valid_size()
            .and_then(|()| r.time_index.trim_to_valid_size());
        self.poisoning(trimmed)
    }

    /// Turns a segment that [`prepare_seal`](Self::prepare_seal) readied into the sealed one;
    /// cannot fail.
    pub fn into_sealed(self) -> SealedSegment {
        assert!(
            self.failed.is_none(),
            "{}: sealing a poisoned segment",
            self.r.log.path().display()
        );
        SealedSegment {
            r: self.r,
            storage: self.storage,
            next_offset: self.next_offset,
            created_ms: self.created_ms,
        }
    }
}

impl SealedSegment {
    /// Opens a sealed segment of an existing log, read-only; `now_ms` is its load time, which
    /// its `segment.ms` clock counts from should it become the active segment again.
    pub fn open(
        storage: Arc<dyn Storage>,
        dir: &Path,
        base_offset: Offset,
        config: SegmentConfig,
        now_ms: i64,
    ) -> SegmentResult<SealedSegment> {
        let r = open_reader(&*storage, dir, base_offset, config, OpenMode::Read)?;
        let next_offset = r.load_next_offset()?;
        Ok(SealedSegment {
            r,
            storage,
            next_offset,
            created_ms: now_ms,
        })
    }

    /// The offset after its last batch.
    pub fn next_offset(&self) -> Offset {
        self.next_offset
    }

    /// Deletes the segment's files.
    pub fn delete(self) -> SegmentResult<()> {
        let SealedSegment { r, storage, .. } = self;
        r.delete_files(&*storage)
    }

    /// Deletes the segment by renaming its files with [`DELETED_SUFFIX`], durably; the caller
    /// removes them later ([`DeletedSegmentFiles::remove`]).
    pub fn rename_deleted(self) -> SegmentResult<DeletedSegmentFiles> {
        let SealedSegment { r, storage, .. } = self;
        r.rename_deleted(&*storage)
    }

    /// Turns it back into the active segment (when truncation makes it the last one): the log
    /// is reopened for writing and the indexes are given room again. Its `segment.ms` clock
    /// (for batches without timestamps) still counts from when the segment was created or
    /// loaded, as Kafka's `LogSegment` keeps `created` through `truncateTo` unless that empties
    /// it (then [`ActiveSegment::truncate_to`] restarts the clock).
    pub fn reopen_active(self) -> SegmentResult<ActiveSegment> {
        let SealedSegment {
            r,
            storage,
            created_ms,
            ..
        } = self;
        let (dir, base, config) = (r.dir.clone(), r.base_offset, r.config);
        drop(r);
        ActiveSegment::open(storage, &dir, base, config, created_ms)
    }
}

/// Whether `[from, to)` of `file` holds only zero bytes. Holes (preallocated, unwritten space)
/// are skipped without reading them; only data ranges are read. The ranges are all found before
/// any is read: a buffered read's readahead fills the page cache past it, and cached pages of
/// unwritten space count as data for `SEEK_DATA`, so reading while seeking would walk the whole
/// preallocated tail.
fn all_zero(file: &dyn StorageFile, from: u64, to: u64) -> SegmentResult<bool> {
    let mut ranges = Vec::new();
    let mut pos = from;
    while pos < to {
        let Some((start, end)) = file.data_range(pos)? else {
            break;
        };
        let (start, end) = (start.max(pos), end.min(to));
        if start >= end {
            break;
        }
        ranges.push((start, end));
        pos = end;
    }
    let mut buf = vec![0u8; 64 << 10];
    for (start, end) in ranges {
        let mut at = start;
        while at < end {
            let n = buf.len().min((end - at) as usize);
            file.read_exact_at(&mut buf[..n], at)?;
            if buf[..n].iter().any(|&b| b != 0) {
                return Ok(false);
            }
            at += n as u64;
        }
    }
    Ok(true)
}

fn log_size(log: &dyn StorageFile) -> SegmentResult<u32> {
    let len = log.len()?;
    u32::try_from(len)
        .ok()
        .filter(|&l| l <= i32::MAX as u32)
        .ok_or_else(|| SegmentError::DoesNotFit {
            path: log.path().to_path_buf(),
            reason: format!("{len} bytes is beyond the 2 GiB segment limit"),
        })
}
