//! The preallocated, memory-mapped file of fixed-size entries that the offset index and the time
//! index are both made of (Kafka's `AbstractIndex`).
//!
//! [`MmapIndex<E>`] owns everything the two indexes share: creating and preallocating the file,
//! mapping it, counting the valid entries of an existing file, appending, binary search,
//! truncation, resizing, trimming for sealing, flushing, the common sanity checks, renaming and
//! deleting. [`OffsetIndex`](crate::OffsetIndex) and [`TimeIndex`](crate::TimeIndex) are this type
//! at a concrete entry type, with their few entry-specific methods in `offset_index.rs` and
//! `time_index.rs`.
//!
//! # States
//! - **Writable** (active segment): the file has its preallocated length, the trailing slots are
//!   zeros, and it is mapped read-write. `entries` counts the valid slots; the newest of them
//!   may still sit in a small heap buffer (see *The pending tail* below).
//! - **Read-only** (sealed segment): the file has been trimmed to exactly `entries × SIZE` bytes
//!   and is mapped read-only (an empty index is a 0-byte file, which is not mapped at all).
//!   [`MmapIndex::resize`] makes it writable again, as Kafka does when a truncation turns a sealed
//!   segment back into the active one.
//!
//! # Counting the entries of an existing file
//! Kafka takes `entries = file length / SIZE` on open and relies on the caller: a sealed file was
//! trimmed, and a live file left at full length by a crash is rebuilt by recovery. We keep the
//! O(1) rule where it is right and make the other case safe on its own:
//! - file shorter than the preallocation size whose last slot is written (or that has a single
//!   slot) → it was trimmed when sealed → `entries = length / SIZE`, without reading the file
//!   (thousands of sealed indexes are opened at startup);
//! - otherwise (untrimmed: a crash, an index that filled up exactly, or one preallocated under a
//!   smaller `max_index_size_bytes`) → entries are the slots before the first all-zero slot after
//!   slot 0, found by a forward scan bounded by the file length. A valid entry after slot 0 is
//!   never all zeros (offset-index entries have relative offset > 0 there; time-index timestamps
//!   are > the first one, which is ≥ 0), so this is also the longest prefix that can be valid if
//!   the crash lost some pages. Slot 0 counts unless it *and* slot 1 are both zero: an all-zero
//!   slot 0 is either `(base, position 0)` — exactly what an empty offset index answers anyway —
//!   or a never-written slot, and the bytes cannot tell them apart.
//!
//! # Disk space
//! The preallocated file is sparse: its blocks are allocated when a page is first written
//! through the mapping. On a full file system that first touch would raise `SIGBUS` and kill
//! the process, so a writable index reserves blocks ahead of use with `fallocate`
//! ([`MmapIndex::reserve`], in [`RESERVE_CHUNK_BYTES`] steps): the segment reserves room for
//! the entries an append may add *before* writing the log, and a full disk then fails that
//! append with `ENOSPC` before any byte is written. File systems without `fallocate` are
//! not protected (the reservation is skipped, as before). A newly created index reserves its
//! first chunk right away (best effort, see `prepare_first_chunk`), so that the first appends
//! of a segment make no system call for their index entries.
//!
//! # The pending tail
//! Appended entries first go to a heap buffer of at most [`PENDING_MAX_BYTES`] and reach the
//! file with one `pwrite` when the buffer would overflow (checked in
//! [`MmapIndex::reserve`], before the segment writes its log bytes, so a failing write fails
//! that append cleanly), on [`flush`](MmapIndex::flush), on sealing and on close. Lookups read
//! both the mapping and the buffer. Writing through the mapping instead would make every index
//! page the process ever appended to part of its resident set: a page per index, two per
//! partition, 80 MiB for 10,000 partitions that each hold a few entries (measured with the
//! `mirror` bench's 10,000-partition variant). With `pwrite` the pages live in the page cache
//! only, and the mapping makes resident just the pages lookups read, as Kafka's does.
//!
//! A process crash loses the buffered entries: the file then holds a shorter valid prefix,
//! which the counting rule above reads correctly, and the engine rebuilds the active segment's
//! indexes on every unclean reopen anyway (it scans the active segment). Sealed indexes never
//! hold a pending tail.
//!
//! This scan is why truncation zeroes the slots it drops: "written slots, then zeros" must hold
//! for every untrimmed file we leave behind. Recovery after an unclean shutdown still rebuilds
//! the indexes of the segments it replays, as Kafka does; the scan only keeps a reopened index
//! from serving garbage before that.

use std::fmt;
use std::fs::{self, File, OpenOptions};
use std::io;
use std::marker::PhantomData;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use memmap2::{Mmap, MmapMut};

use crate::error::{Error, Result};
use crate::files::remove_if_exists;
use crate::types::{Offset, RelativeOffset};

/// Kafka searches the last 8 KiB of an index first: lookups by consumers near the tail then only
/// touch pages that are already resident (`AbstractIndex.warmEntries`).
const WARM_SECTION_BYTES: usize = 8192;

mod sealed {
    pub trait Sealed {}
}

/// One fixed-size entry of a memory-mapped index. Implemented by [`OffsetEntry`] and
/// [`TimeEntry`] only.
///
/// [`OffsetEntry`]: crate::OffsetEntry
/// [`TimeEntry`]: crate::TimeEntry
pub trait IndexEntry: Copy + fmt::Debug + PartialEq + sealed::Sealed {
    /// Bytes per entry on disk.
    const SIZE: usize;
    /// What this index is called in errors and panics.
    const KIND: &'static str;
    /// Slots kept free for an append that skips the full check (the time index keeps one for the
    /// entry appended when its segment rolls).
    const RESERVED_SLOTS: usize;

    /// Decodes an entry from exactly [`Self::SIZE`] bytes.
    fn decode(bytes: &[u8]) -> Self;
    /// Encodes the entry into exactly [`Self::SIZE`] bytes.
    fn encode(&self, out: &mut [u8]);
    /// The entry's offset relative to the index's base offset.
    fn relative_offset(&self) -> RelativeOffset;
    /// Entry-specific part of the sanity check, given the first and last entries.
    fn check_order(_first: &Self, _last: &Self) -> Result<(), String> {
        Ok(())
    }
}

pub(crate) use sealed::Sealed;

/// The current mapping of the file.
enum Map {
    /// Nothing mapped: the file is 0 bytes long (mmap of length 0 is not allowed).
    Empty,
    /// A sealed index.
    ReadOnly(Mmap),
    /// An active index.
    ReadWrite(MmapMut),
}

impl Map {
    fn bytes(&self) -> &[u8] {
        match self {
            Map::Empty => &[],
            Map::ReadOnly(m) => m,
            Map::ReadWrite(m) => m,
        }
    }
}

/// Maps `file` (of length `length`) read-write or read-only.
fn map_file(file: &File, path: &Path, length: u64, writable: bool) -> Result<Map> {
    if length == 0 {
        return Ok(Map::Empty);
    }
    if writable {
        // SAFETY: a mapping is unsound only if the file changes underneath it through another
        // handle (a shrink makes accesses fault, a write changes bytes we lent out as `&[u8]`).
        // While an `MmapIndex` is alive it is the only handle mirrorlog has on its file: each
        // index file belongs to one segment, all mutation goes through `&mut self`, and every
        // length change (`remap`) drops the mapping before calling `set_len`. Other processes
        // editing a partition directory are out of scope, as they are for Kafka.
        let map = unsafe { MmapMut::map_mut(file) }.map_err(Error::io("mmap", path))?;
        // Index access is random (binary search) or appends at the end: without this, the
        // first touch of a freshly preallocated mapping reads ahead megabytes of zeroed page
        // cache (measured: 3.4 ms vs 12 us per new segment).
        map.advise(memmap2::Advice::Random)
            .map_err(Error::io("madvise", path))?;
        Ok(Map::ReadWrite(map))
    } else {
        // SAFETY: as above: this index is the only handle on the file while it is mapped and
        // never changes its length without unmapping first.
        let map = unsafe { Mmap::map(file) }.map_err(Error::io("mmap", path))?;
        map.advise(memmap2::Advice::Random)
            .map_err(Error::io("madvise", path))?;
        Ok(Map::ReadOnly(map))
    }
}

/// Bytes of index file reserved at a time by [`MmapIndex::reserve`] (8192 offset-index entries,
/// about 32 MiB of log at the default `index.interval.bytes`).
pub const RESERVE_CHUNK_BYTES: u64 = 64 * 1024;

/// The most bytes of appended entries a writable index holds in its heap buffer before writing
/// them to the file (256 offset-index entries, 170 time-index entries; see the module docs'
/// *The pending tail*).
pub const PENDING_MAX_BYTES: usize = 2048;

/// A preallocated, memory-mapped file of fixed-size `E` entries, strictly ordered by offset. See
/// the module documentation for its states and how an existing file's entries are counted.
pub struct MmapIndex<E: IndexEntry> {
    path: PathBuf,
    base_offset: Offset,
    map: Map,
    /// The file's length in bytes (always the mapping's length).
    length_bytes: u64,
    /// Valid entries: the first `written` slots of the file, then those in `pending`.
    entries: usize,
    /// Valid entries already written to the file (all of them unless writable).
    written: usize,
    /// Encoded entries `written..entries`, not yet in the file (empty unless writable). The
    /// file's slots from `written` on are zeros.
    pending: Vec<u8>,
    /// Slots in the file: `length_bytes / E::SIZE`.
    max_entries: usize,
    writable: bool,
    /// The file's leading bytes known to have blocks allocated (written or reserved); the rest
    /// of a preallocated file may be a hole. `u64::MAX` once `fallocate` proved unsupported.
    reserved_bytes: u64,
    /// The last valid entry, kept beside the mapping: every append checks its order against it,
    /// and reading it here spares a touch of the mapped page (with many partitions, a cache and
    /// TLB miss per append).
    last: Option<E>,
    _entry: PhantomData<E>,
}

impl<E: IndexEntry> fmt::Debug for MmapIndex<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct(E::KIND)
            .field("path", &self.path)
            .field("base_offset", &self.base_offset)
            .field("entries", &self.entries)
            .field("max_entries", &self.max_entries)
            .field("writable", &self.writable)
            .finish()
    }
}

/// `size` rounded down to a whole number of `E` entries.
fn round_down<E: IndexEntry>(size: u64) -> u64 {
    size - size % E::SIZE as u64
}

/// `true` when the file has two or more slots and the last is all zeros: a trimmed file never
/// ends that way, so the file was left untrimmed.
fn ends_in_unwritten_slot(bytes: &[u8], size: usize) -> bool {
    let slots = bytes.len() / size;
    slots >= 2
        && bytes[(slots - 1) * size..slots * size]
            .iter()
            .all(|&b| b == 0)
}

/// Valid entries of an untrimmed file: the slots before the first all-zero slot after slot 0
/// (slot 0 itself counts unless it and slot 1 are both zero). See the module docs.
fn count_written_slots(bytes: &[u8], size: usize) -> usize {
    let is_zero = |slot: &[u8]| slot.iter().all(|&b| b == 0);
    let mut slots = bytes.chunks_exact(size);
    let Some(first) = slots.next() else {
        return 0;
    };
    let n = 1 + slots.take_while(|s| !is_zero(s)).count();
    if n == 1 && is_zero(first) { 0 } else { n }
}

impl<E: IndexEntry> MmapIndex<E> {
    /// Opens the index at `path` for a segment starting at `base_offset`.
    ///
    /// - `writable` and no file: creates it, preallocated to `max_index_size_bytes` rounded down
    ///   to whole entries, empty, mapped read-write.
    /// - `writable` and a file: maps it read-write at its current length. A trimmed (sealed) file
    ///   stays at its length — call [`resize`](Self::resize) to make room before appending, as
    ///   Kafka's loader does for the active segment.
    /// - not `writable`: maps an existing file read-only; a missing file is an [`Error::Io`].
    ///
    /// Entries of an existing file are counted as the module docs describe. Fails with
    /// [`Error::InvalidConfig`] when `max_index_size_bytes` cannot hold one entry and with
    /// [`Error::InvalidOffset`] when `base_offset` is negative or so large that relative offsets
    /// could overflow it.
    pub fn open(
        path: impl Into<PathBuf>,
        base_offset: Offset,
        max_index_size_bytes: u64,
        writable: bool,
    ) -> Result<Self> {
        let path = path.into();
        if !(0..=i64::MAX - i64::from(i32::MAX)).contains(&base_offset.get()) {
            return Err(Error::InvalidOffset {
                path,
                offset: base_offset,
                base_offset,
            });
        }
        let max_size = round_down::<E>(max_index_size_bytes);
        if max_size == 0 {
            return Err(Error::InvalidConfig {
                name: "max_index_size_bytes",
                reason: format!(
                    "{max_index_size_bytes} bytes cannot hold one {}-byte {} entry",
                    E::SIZE,
                    E::KIND
                ),
            });
        }
        let (file, newly_created) = if writable {
            match OpenOptions::new()
                .read(true)
                .write(true)
                .create_new(true)
                .open(&path)
            {
                Ok(file) => (file, true),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                    let file = OpenOptions::new()
                        .read(true)
                        .write(true)
                        .open(&path)
                        .map_err(Error::io("open", &path))?;
                    (file, false)
                }
                Err(e) => return Err(Error::io("create", &path)(e)),
            }
        } else {
            (File::open(&path).map_err(Error::io("open", &path))?, false)
        };
        if newly_created {
            file.set_len(max_size)
                .map_err(Error::io("preallocate", &path))?;
        }
        let length_bytes = file.metadata().map_err(Error::io("stat", &path))?.len();
        let map = map_file(&file, &path, length_bytes, writable)?;
        let max_entries = map.bytes().len() / E::SIZE;
        let entries = if newly_created {
            0
        } else if length_bytes < max_size && !ends_in_unwritten_slot(map.bytes(), E::SIZE) {
            max_entries
        } else {
            count_written_slots(map.bytes(), E::SIZE)
        };
        let mut index = MmapIndex {
            path,
            base_offset,
            map,
            length_bytes,
            entries,
            written: entries,
            pending: Vec::new(),
            max_entries,
            writable,
            // Written slots have their blocks; anything after may be a hole.
            reserved_bytes: (entries * E::SIZE) as u64,
            last: None,
            _entry: PhantomData,
        };
        index.last = index.entries.checked_sub(1).map(|i| index.slot(i));
        if newly_created {
            index.prepare_first_chunk(&file);
        }
        Ok(index)
    }

    /// The index file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The offset of the segment this index belongs to; relative offsets are relative to it.
    pub fn base_offset(&self) -> Offset {
        self.base_offset
    }

    /// Number of valid entries.
    pub fn entries(&self) -> usize {
        self.entries
    }

    /// `true` when there are no entries.
    pub fn is_empty(&self) -> bool {
        self.entries == 0
    }

    /// Slots the file has room for (`file length / entry size`).
    pub fn max_entries(&self) -> usize {
        self.max_entries
    }

    /// Entries that may still be appended through the normal path (the time index keeps one
    /// slot for the entry written on roll).
    pub fn free_slots(&self) -> usize {
        self.max_entries
            .saturating_sub(E::RESERVED_SLOTS)
            .saturating_sub(self.entries)
    }

    /// [`Error::IndexFull`] unless `entries` more fit ([`free_slots`](Self::free_slots)).
    ///
    /// # Errors
    /// As said.
    pub fn check_room(&self, entries: usize) -> Result<()> {
        if entries > self.free_slots() {
            return Err(self.full_error());
        }
        Ok(())
    }

    /// `true` when no further entry may be appended through the normal path (the time index keeps
    /// one slot for the entry written on roll).
    pub fn is_full(&self) -> bool {
        self.entries >= self.max_entries.saturating_sub(E::RESERVED_SLOTS)
    }

    /// `true` while the index is mapped read-write (active).
    pub fn is_writable(&self) -> bool {
        self.writable
    }

    /// The file's length in bytes (the preallocated size while active).
    pub fn file_size_bytes(&self) -> u64 {
        self.length_bytes
    }

    /// The bytes of the valid entries (`entries × entry size`).
    pub fn valid_size_bytes(&self) -> u64 {
        (self.entries * E::SIZE) as u64
    }

    /// Entry `i` as stored, or `None` past the valid entries.
    pub fn raw_entry(&self, i: usize) -> Option<E> {
        (i < self.entries).then(|| self.slot(i))
    }

    /// The last valid entry as stored.
    pub fn raw_last_entry(&self) -> Option<E> {
        debug_assert_eq!(self.last, self.entries.checked_sub(1).map(|i| self.slot(i)));
        self.last
    }

    /// The offset of the last entry, or the base offset when empty (Kafka's `lastOffset`).
    pub fn last_offset(&self) -> Offset {
        self.raw_last_entry()
            .map_or(self.base_offset, |e| self.absolute(e.relative_offset()))
    }

    /// `base_offset + relative`. Cannot overflow: `open` bounds the base offset.
    pub(crate) fn absolute(&self, relative: RelativeOffset) -> Offset {
        self.base_offset.plus_relative(relative)
    }

    /// `offset` relative to the base offset, or [`Error::InvalidOffset`] when it does not fit.
    pub(crate) fn relative(&self, offset: Offset) -> Result<RelativeOffset> {
        offset
            .relative_to(self.base_offset)
            .ok_or_else(|| Error::InvalidOffset {
                path: self.path.clone(),
                offset,
                base_offset: self.base_offset,
            })
    }

    /// The error for an append to a full index.
    pub(crate) fn full_error(&self) -> Error {
        Error::IndexFull {
            path: self.path.clone(),
            max_entries: self.max_entries,
        }
    }

    /// Decodes valid entry `i`, from the mapping or the pending tail.
    fn slot(&self, i: usize) -> E {
        if i < self.written {
            let start = i * E::SIZE;
            E::decode(&self.map.bytes()[start..start + E::SIZE])
        } else {
            let start = (i - self.written) * E::SIZE;
            E::decode(&self.pending[start..start + E::SIZE])
        }
    }

    /// Writes the pending tail to `file` (this index's file, open for writing) after the
    /// written slots. On failure the tail stays pending and nothing is lost from memory.
    fn write_pending(&mut self, file: &File) -> Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        file.write_all_at(&self.pending, (self.written * E::SIZE) as u64)
            .map_err(Error::io("write", &self.path))?;
        self.written = self.entries;
        self.pending.clear();
        Ok(())
    }

    /// Opens this index's file for writing.
    fn open_for_write(&self) -> Result<File> {
        OpenOptions::new()
            .write(true)
            .open(&self.path)
            .map_err(Error::io("open", &self.path))
    }

    /// Readies the index for `entries` more appends: makes sure the blocks behind them are
    /// allocated, so that writing them to the file cannot fail on a full disk, and writes the
    /// pending tail to the file first if they would overflow [`PENDING_MAX_BYTES`]. Reserves in
    /// [`RESERVE_CHUNK_BYTES`] steps, never past the file's length; a no-op for a read-only
    /// index, and the reservation is skipped on file systems without `fallocate`. Fails with
    /// [`Error::Io`] (`ENOSPC` when the disk is full), in which case no entry was lost or added.
    pub fn reserve(&mut self, entries: usize) -> Result<()> {
        if !self.writable {
            return Ok(());
        }
        let need = (((self.entries + entries) * E::SIZE) as u64).min(self.length_bytes);
        let allocate = need > self.reserved_bytes;
        let spill = self.pending.len() + entries * E::SIZE > PENDING_MAX_BYTES;
        if !allocate && !spill {
            return Ok(());
        }
        let file = self.open_for_write()?;
        if allocate {
            let end = need
                .next_multiple_of(RESERVE_CHUNK_BYTES)
                .min(self.length_bytes);
            self.allocate(&file, end)
                .map_err(Error::io("fallocate", &self.path))?;
        }
        if spill {
            self.write_pending(&file)?;
        }
        Ok(())
    }

    /// Allocates the blocks of `reserved_bytes..end` of `file` (this index's file) and records
    /// them as reserved; on a file system without `fallocate`, records that nothing can be.
    fn allocate(&mut self, file: &File, end: u64) -> io::Result<()> {
        let start = self.reserved_bytes;
        // SAFETY: fallocate on an fd we own with a range inside the file; mode 0 only
        // allocates blocks (the length is already `length_bytes`).
        let rc = unsafe {
            libc::fallocate(
                std::os::fd::AsRawFd::as_raw_fd(file),
                0,
                start as libc::off_t,
                (end - start) as libc::off_t,
            )
        };
        if rc == 0 {
            self.reserved_bytes = end;
            return Ok(());
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EOPNOTSUPP) | Some(libc::ENOSYS) => {
                self.reserved_bytes = u64::MAX;
                Ok(())
            }
            _ => Err(e),
        }
    }

    /// Readies a newly created index for its first appends, while the segment is being created
    /// (which already costs file creations and a directory sync): reserves the first
    /// [`RESERVE_CHUNK_BYTES`]. Without this the first append of every segment pays an `open`,
    /// a `fallocate` and a `close` per index — measured at ~6% of appends spread round-robin
    /// over 1000 fresh partitions. (The first entries themselves go to the pending tail, so no
    /// page is faulted in.)
    ///
    /// Best effort: on a full disk (or any failure) the first append's
    /// [`reserve`](Self::reserve) allocates, or refuses, as it would have.
    fn prepare_first_chunk(&mut self, file: &File) {
        let end = RESERVE_CHUNK_BYTES.min(self.length_bytes);
        let _ = self.allocate(file, end);
    }

    /// Appends `entry` after the last one; the caller has checked its order.
    ///
    /// Panics if the index is read-only (a sealed index has no append). Fails with
    /// [`Error::IndexFull`] when `skip_full_check` is false and [`is_full`](Self::is_full), or
    /// when no slot is left at all.
    pub(crate) fn push(&mut self, entry: E, skip_full_check: bool) -> Result<()> {
        assert!(
            self.writable,
            "append to read-only {} {}",
            E::KIND,
            self.path.display()
        );
        if (!skip_full_check && self.is_full()) || self.entries >= self.max_entries {
            return Err(self.full_error());
        }
        let start = self.pending.len();
        self.pending.resize(start + E::SIZE, 0);
        entry.encode(&mut self.pending[start..]);
        self.entries += 1;
        self.last = Some(entry);
        debug_assert_eq!(self.raw_last_entry(), Some(entry));
        Ok(())
    }

    /// The number of leading entries for which `pred` holds; `pred` must be true then false
    /// along the index (entries are ordered). Searches the warm tail section first.
    pub(crate) fn partition_point(&self, pred: impl Fn(&E) -> bool) -> usize {
        let n = self.entries;
        let first_hot = n.saturating_sub(1 + WARM_SECTION_BYTES / E::SIZE);
        let (mut lo, mut hi) = if n > 0 && pred(&self.slot(first_hot)) {
            (first_hot + 1, n)
        } else {
            (0, first_hot)
        };
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if pred(&self.slot(mid)) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// The last entry whose `key` is ≤ `target` (keys ascend along the index), if any.
    pub(crate) fn largest_lower_bound<K: Ord>(
        &self,
        target: &K,
        key: impl Fn(&E) -> K,
    ) -> Option<E> {
        let n = self.partition_point(|e| key(e) <= *target);
        n.checked_sub(1).map(|i| self.slot(i))
    }

    /// Drops every entry whose offset is ≥ `offset` (all of them when `offset` ≤ the base).
    ///
    /// A writable index zeroes the dropped slots (so a later reopen of the untrimmed file does
    /// not count them again); a read-only (sealed) index shrinks its file to the remaining
    /// entries, so that the sealed-file rule `entries = length / size` keeps holding.
    pub fn truncate_to(&mut self, offset: Offset) -> Result<()> {
        let keep = self.partition_point(|e| self.absolute(e.relative_offset()) < offset);
        self.truncate_to_entries(keep)
    }

    /// Drops every entry.
    pub fn truncate(&mut self) -> Result<()> {
        self.truncate_to_entries(0)
    }

    fn truncate_to_entries(&mut self, keep: usize) -> Result<()> {
        if keep >= self.entries {
            return Ok(());
        }
        // The kept slots do not change: read the new last one while it is surely mapped.
        self.last = keep.checked_sub(1).map(|i| self.slot(i));
        match &mut self.map {
            Map::ReadWrite(map) => {
                if keep >= self.written {
                    self.pending.truncate((keep - self.written) * E::SIZE);
                } else {
                    self.pending.clear();
                    map[keep * E::SIZE..self.written * E::SIZE].fill(0);
                    self.written = keep;
                }
                self.entries = keep;
                Ok(())
            }
            Map::ReadOnly(_) | Map::Empty => {
                self.entries = keep;
                self.written = keep;
                self.remap((keep * E::SIZE) as u64, false)
            }
        }
    }

    /// Sets the file length to `new_size_bytes` rounded down to whole entries and maps it
    /// read-write (so a sealed index becomes writable again). Returns whether the length changed.
    ///
    /// Panics if the new size cannot hold the valid entries: shrinking below them is a
    /// programmer error (truncate first).
    pub fn resize(&mut self, new_size_bytes: u64) -> Result<bool> {
        let rounded = round_down::<E>(new_size_bytes);
        assert!(
            rounded >= self.valid_size_bytes(),
            "resizing {} {} to {rounded} bytes would drop some of its {} entries",
            E::KIND,
            self.path.display(),
            self.entries
        );
        let changed = rounded != self.length_bytes;
        if changed || !self.writable {
            self.remap(rounded, true)?;
        }
        Ok(changed)
    }

    /// Seals the index: shrinks the file to exactly its valid entries (0 bytes when empty) and
    /// maps it read-only.
    pub fn trim_to_valid_size(&mut self) -> Result<()> {
        self.remap(self.valid_size_bytes(), false)
    }

    /// Writes the pending tail, unmaps, sets the file length to `length` if it differs, and maps
    /// it again.
    fn remap(&mut self, length: u64, writable: bool) -> Result<()> {
        let resize = length != self.length_bytes;
        let file = OpenOptions::new()
            .read(true)
            .write(writable || resize || !self.pending.is_empty())
            .open(&self.path)
            .map_err(Error::io("open", &self.path))?;
        self.write_pending(&file)?;
        // Unmap before any length change: a mapping past the end of the file would fault.
        self.map = Map::Empty;
        if resize {
            file.set_len(length)
                .map_err(Error::io("set_len", &self.path))?;
            if length < self.length_bytes {
                self.reserved_bytes = self.reserved_bytes.min(length);
            }
            self.length_bytes = length;
        }
        self.map = map_file(&file, &self.path, length, writable)?;
        self.max_entries = self.map.bytes().len() / E::SIZE;
        self.writable = writable;
        debug_assert!(self.entries <= self.max_entries);
        Ok(())
    }

    /// Writes the pending tail to the file and the file's pages back to the disk (msync); a
    /// no-op for a read-only index.
    pub fn flush(&mut self) -> Result<()> {
        if !self.pending.is_empty() {
            let file = self.open_for_write()?;
            self.write_pending(&file)?;
        }
        match &self.map {
            Map::ReadWrite(map) => map.flush().map_err(Error::io("msync", &self.path)),
            Map::ReadOnly(_) | Map::Empty => Ok(()),
        }
    }

    /// Kafka's cheap open-time check: the file length is a whole number of entries and the last
    /// entry's offset is not below the base offset (plus, for the time index, the last timestamp
    /// is not below the first). Fails with [`Error::Corrupt`].
    pub fn sanity_check(&self) -> Result<()> {
        let size = E::SIZE as u64;
        if !self.length_bytes.is_multiple_of(size) {
            return Err(Error::corrupt(
                &self.path,
                round_down::<E>(self.length_bytes),
                format!(
                    "{} length {} is not a multiple of the {size}-byte entry size",
                    E::KIND,
                    self.length_bytes
                ),
            ));
        }
        if let (Some(first), Some(last)) = (self.raw_entry(0), self.raw_last_entry()) {
            let position = ((self.entries - 1) * E::SIZE) as u64;
            let last_offset = self.absolute(last.relative_offset());
            if last_offset < self.base_offset {
                return Err(Error::corrupt(
                    &self.path,
                    position,
                    format!(
                        "last {} entry has offset {last_offset}, below the base offset {}",
                        E::KIND,
                        self.base_offset
                    ),
                ));
            }
            E::check_order(&first, &last)
                .map_err(|reason| Error::corrupt(&self.path, position, reason))?;
        }
        Ok(())
    }

    /// Renames the file (e.g. to add `.deleted` or drop `.swap`); the mapping stays valid.
    pub fn rename_to(&mut self, new_path: impl Into<PathBuf>) -> Result<()> {
        let new_path = new_path.into();
        fs::rename(&self.path, &new_path).map_err(Error::io("rename", &self.path))?;
        self.path = new_path;
        Ok(())
    }

    /// Unmaps and deletes the file. Returns `false` if it was already gone.
    pub fn delete(mut self) -> Result<bool> {
        self.map = Map::Empty;
        remove_if_exists(&self.path)
    }

    /// Closes the index. A writable index is flushed and trimmed to its valid entries first, as
    /// Kafka does, so a cleanly closed index reopens with `entries = length / size`.
    pub fn close(mut self) -> Result<()> {
        if self.writable {
            self.flush()?;
            self.trim_to_valid_size()?;
        }
        Ok(())
    }
}
