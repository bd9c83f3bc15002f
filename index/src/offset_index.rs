//! The offset index (`<base offset>.index`): a sparse map from offsets to byte positions in the
//! segment's `.log` (Kafka's `OffsetIndex`).
//!
//! Each 8-byte entry is `relative offset i32 BE | position i32 BE`, mapping the *last* offset of
//! a batch to the position where that batch *starts*. Entries are strictly increasing in offset.
//! The file mechanics (preallocation, mmap, truncation, sealing) are [`MmapIndex`]'s.

use crate::error::Result;
use crate::mmap_index::{IndexEntry, MmapIndex, Sealed};
use crate::types::{FilePosition, Offset, RelativeOffset};

/// One offset-index entry as stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OffsetEntry {
    /// The indexed offset minus the segment's base offset.
    pub relative_offset: RelativeOffset,
    /// The byte position in `.log` of the batch holding that offset.
    pub position: FilePosition,
}

/// Bytes per offset-index entry.
pub const OFFSET_ENTRY_SIZE: usize = 8;
const _: () = assert!(OFFSET_ENTRY_SIZE == 4 + 4);

impl Sealed for OffsetEntry {}

impl IndexEntry for OffsetEntry {
    const SIZE: usize = OFFSET_ENTRY_SIZE;
    const KIND: &'static str = "offset index";
    const RESERVED_SLOTS: usize = 0;

    fn decode(bytes: &[u8]) -> Self {
        let word = |at: usize| i32::from_be_bytes(bytes[at..at + 4].try_into().expect("4 bytes"));
        OffsetEntry {
            relative_offset: RelativeOffset(word(0)),
            // Kafka stores the position as a signed int; positions are < 2 GiB, so the bits are
            // the same. A negative value can only come from a corrupt file and is kept as is.
            position: FilePosition(word(4) as u32),
        }
    }

    fn encode(&self, out: &mut [u8]) {
        out[..4].copy_from_slice(&self.relative_offset.get().to_be_bytes());
        out[4..8].copy_from_slice(&(self.position.get() as i32).to_be_bytes());
    }

    fn relative_offset(&self) -> RelativeOffset {
        self.relative_offset
    }
}

/// A segment's offset index. See [`MmapIndex`] for opening, truncating, sealing and the rest.
pub type OffsetIndex = MmapIndex<OffsetEntry>;

impl MmapIndex<OffsetEntry> {
    /// Appends an entry mapping `offset` to `position`.
    ///
    /// Panics when `offset` is not greater than the last entry's offset (index order is an
    /// invariant, checked in release builds too), when `position` does not fit Kafka's `int`, or
    /// when the index is read-only. Fails with [`Error::InvalidOffset`] when `offset` is not
    /// within `base_offset ..= base_offset + i32::MAX`, and with [`Error::IndexFull`] when every
    /// slot is used.
    ///
    /// [`Error::InvalidOffset`]: crate::Error::InvalidOffset
    /// [`Error::IndexFull`]: crate::Error::IndexFull
    pub fn append(&mut self, offset: Offset, position: FilePosition) -> Result<()> {
        if let Some(last) = self.raw_last_entry() {
            let last_offset = self.absolute(last.relative_offset);
            assert!(
                offset > last_offset,
                "offset index {}: appending offset {offset} after offset {last_offset}; \
                 offsets must strictly increase",
                self.path().display()
            );
        }
        assert!(
            i32::try_from(position.get()).is_ok(),
            "offset index {}: position {position} does not fit a Kafka int",
            self.path().display()
        );
        let relative_offset = self.relative(offset)?;
        self.push(
            OffsetEntry {
                relative_offset,
                position,
            },
            false,
        )
    }

    /// The entry with the largest offset ≤ `target`, as `(offset, position)`; `(base offset, 0)`
    /// when there is none (the search then starts at the beginning of the segment).
    pub fn lookup(&self, target: Offset) -> (Offset, FilePosition) {
        match self.largest_lower_bound(&target, |e| self.absolute(e.relative_offset)) {
            Some(e) => (self.absolute(e.relative_offset), e.position),
            None => (self.base_offset(), FilePosition(0)),
        }
    }

    /// Kafka's `OffsetIndex.fetchUpperBoundOffset`: the offset of the first entry whose position
    /// is at or after `position` (the end of a fetched slice); every offset of the batches
    /// before that position is below it. `None` when no entry lies there.
    pub fn fetch_upper_bound_offset(&self, position: FilePosition) -> Option<Offset> {
        let i = self.partition_point(|e| e.position < position);
        self.entry(i).map(|(offset, _)| offset)
    }

    /// Entry `i` as `(offset, position)`, or `None` past the valid entries.
    pub fn entry(&self, i: usize) -> Option<(Offset, FilePosition)> {
        self.raw_entry(i)
            .map(|e| (self.absolute(e.relative_offset), e.position))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Error;
    use crate::mmap_index::PENDING_MAX_BYTES;
    use proptest::prelude::*;
    use std::fs;
    use std::path::{Path, PathBuf};

    const MAX: u64 = 10 * 8;

    /// The written slots at the start of an index file's bytes (those before the first zero
    /// slot; the tests' entries are never all zeros).
    fn count_nonzero_slots(bytes: &[u8]) -> usize {
        bytes
            .chunks_exact(OFFSET_ENTRY_SIZE)
            .take_while(|s| s.iter().any(|&b| b != 0))
            .count()
    }

    fn new_index(dir: &Path, base: i64, max: u64) -> (OffsetIndex, PathBuf) {
        let path = dir.join("00000000000000000000.index");
        (
            OffsetIndex::open(&path, Offset(base), max, true).unwrap(),
            path,
        )
    }

    #[test]
    fn reserve_allocates_blocks_ahead_of_the_entries_without_growing_the_file() {
        use crate::mmap_index::RESERVE_CHUNK_BYTES;
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().unwrap();
        let max = 1024 * 1024;
        let (mut idx, path) = new_index(dir.path(), 0, max);
        let allocated = || fs::metadata(&path).unwrap().blocks() * 512;
        // Creation reserved the first chunk (see `prepare_first_chunk`), and no more.
        let before = allocated();
        assert!(
            (RESERVE_CHUNK_BYTES..2 * RESERVE_CHUNK_BYTES).contains(&before),
            "the first chunk reserved at creation: {before} bytes"
        );
        // Within the reserved chunk: no further allocation needed, entries land in it.
        idx.reserve(100).unwrap();
        assert_eq!(allocated(), before);
        idx.append(Offset(1), FilePosition(0)).unwrap();
        // One entry past the first chunk: the next chunk is reserved.
        idx.reserve(RESERVE_CHUNK_BYTES as usize / 8).unwrap();
        assert!(
            allocated() >= before + RESERVE_CHUNK_BYTES,
            "the second chunk reserved: {} -> {} bytes",
            before,
            allocated()
        );
        // A reservation past the end is clamped to the file's length.
        idx.reserve(10 * max as usize).unwrap();
        assert_eq!(fs::metadata(&path).unwrap().len(), max);
        assert!(allocated() >= max);
    }

    #[test]
    fn reserve_on_a_sealed_index_is_a_no_op() {
        let dir = tempfile::tempdir().unwrap();
        let (mut idx, path) = new_index(dir.path(), 0, MAX);
        idx.append(Offset(1), FilePosition(0)).unwrap();
        idx.trim_to_valid_size().unwrap();
        idx.reserve(1000).unwrap();
        assert_eq!(fs::metadata(&path).unwrap().len(), 8);
    }

    #[test]
    fn new_index_is_preallocated_to_whole_entries_and_empty() {
        let dir = tempfile::tempdir().unwrap();
        let (idx, path) = new_index(dir.path(), 0, 85);
        assert_eq!(fs::metadata(&path).unwrap().len(), 80);
        assert_eq!(idx.max_entries(), 10);
        assert_eq!(idx.entries(), 0);
        assert!(idx.is_empty() && !idx.is_full() && idx.is_writable());
        assert_eq!(idx.last_offset(), Offset(0));
    }

    #[test]
    fn sealed_index_bytes_are_kafkas_layout() {
        let dir = tempfile::tempdir().unwrap();
        let (mut idx, path) = new_index(dir.path(), 100, MAX);
        idx.append(Offset(157), FilePosition(4154)).unwrap();
        idx.append(Offset(214), FilePosition(8258)).unwrap();
        idx.close().unwrap();
        assert_eq!(
            fs::read(&path).unwrap(),
            [
                0, 0, 0, 57, 0, 0, 0x10, 0x3a, //
                0, 0, 0, 114, 0, 0, 0x20, 0x42,
            ]
        );
    }

    #[test]
    fn empty_sealed_index_is_zero_bytes_and_reopens_empty() {
        let dir = tempfile::tempdir().unwrap();
        let (idx, path) = new_index(dir.path(), 0, MAX);
        idx.close().unwrap();
        assert_eq!(fs::metadata(&path).unwrap().len(), 0);
        let idx = OffsetIndex::open(&path, Offset(0), MAX, false).unwrap();
        assert_eq!((idx.entries(), idx.max_entries()), (0, 0));
        assert_eq!(idx.lookup(Offset(5)), (Offset(0), FilePosition(0)));
        idx.sanity_check().unwrap();
    }

    #[test]
    fn lookup_finds_the_largest_entry_at_or_below_the_target() {
        let dir = tempfile::tempdir().unwrap();
        let (mut idx, _) = new_index(dir.path(), 10, MAX);
        idx.append(Offset(12), FilePosition(100)).unwrap();
        idx.append(Offset(20), FilePosition(200)).unwrap();
        idx.append(Offset(30), FilePosition(300)).unwrap();
        assert_eq!(idx.lookup(Offset(0)), (Offset(10), FilePosition(0)));
        assert_eq!(idx.lookup(Offset(11)), (Offset(10), FilePosition(0)));
        assert_eq!(idx.lookup(Offset(12)), (Offset(12), FilePosition(100)));
        assert_eq!(idx.lookup(Offset(29)), (Offset(20), FilePosition(200)));
        assert_eq!(
            idx.lookup(Offset(i64::MAX)),
            (Offset(30), FilePosition(300))
        );
        assert_eq!(idx.entry(1), Some((Offset(20), FilePosition(200))));
        assert_eq!(idx.entry(3), None);
        assert_eq!(idx.last_offset(), Offset(30));
    }

    #[test]
    #[should_panic(expected = "offsets must strictly increase")]
    fn appending_a_non_increasing_offset_panics() {
        let dir = tempfile::tempdir().unwrap();
        let (mut idx, _) = new_index(dir.path(), 0, MAX);
        idx.append(Offset(5), FilePosition(0)).unwrap();
        let _ = idx.append(Offset(5), FilePosition(10));
    }

    #[test]
    fn offsets_outside_the_relative_range_are_invalid() {
        let dir = tempfile::tempdir().unwrap();
        let (mut idx, _) = new_index(dir.path(), 100, MAX);
        for offset in [99, 100 + i64::from(i32::MAX) + 1] {
            let err = idx.append(Offset(offset), FilePosition(0)).unwrap_err();
            let Error::InvalidOffset {
                offset: o,
                base_offset,
                ..
            } = err
            else {
                panic!("{err:?}")
            };
            assert_eq!((o, base_offset), (Offset(offset), Offset(100)));
        }
        idx.append(Offset(100 + i64::from(i32::MAX)), FilePosition(0))
            .unwrap();
    }

    #[test]
    fn a_full_index_refuses_appends_with_index_full() {
        let dir = tempfile::tempdir().unwrap();
        let (mut idx, _) = new_index(dir.path(), 0, 16);
        idx.append(Offset(1), FilePosition(1)).unwrap();
        idx.append(Offset(2), FilePosition(2)).unwrap();
        assert!(idx.is_full());
        let err = idx.append(Offset(3), FilePosition(3)).unwrap_err();
        assert!(
            matches!(err, Error::IndexFull { max_entries: 2, .. }),
            "{err:?}"
        );
    }

    #[test]
    fn too_small_a_max_size_is_an_invalid_config() {
        let dir = tempfile::tempdir().unwrap();
        let err = OffsetIndex::open(dir.path().join("x.index"), Offset(0), 7, true).unwrap_err();
        assert!(matches!(err, Error::InvalidConfig { .. }), "{err:?}");
        assert!(!dir.path().join("x.index").exists());
    }

    #[test]
    fn negative_base_offsets_are_invalid() {
        let dir = tempfile::tempdir().unwrap();
        let err = OffsetIndex::open(dir.path().join("x.index"), Offset(-1), MAX, true).unwrap_err();
        assert!(matches!(err, Error::InvalidOffset { .. }), "{err:?}");
    }

    #[test]
    fn opening_a_missing_index_read_only_is_an_io_error() {
        let dir = tempfile::tempdir().unwrap();
        let err = OffsetIndex::open(dir.path().join("x.index"), Offset(0), MAX, false).unwrap_err();
        assert!(matches!(err, Error::Io { op: "open", .. }), "{err:?}");
    }

    #[test]
    fn truncate_to_drops_entries_at_or_above_the_offset() {
        let dir = tempfile::tempdir().unwrap();
        let (mut idx, path) = new_index(dir.path(), 0, MAX);
        for (o, p) in [(10, 1), (20, 2), (30, 3)] {
            idx.append(Offset(o), FilePosition(p)).unwrap();
        }
        idx.truncate_to(Offset(31)).unwrap();
        assert_eq!(idx.entries(), 3);
        idx.truncate_to(Offset(30)).unwrap();
        assert_eq!(idx.entries(), 2);
        idx.truncate_to(Offset(25)).unwrap();
        assert_eq!(idx.entries(), 2);
        idx.truncate_to(Offset(11)).unwrap();
        assert_eq!(idx.entries(), 1);
        idx.flush().unwrap();
        // Dropped slots are zeroed, so a reopen of the untrimmed file counts one entry.
        assert!(fs::read(&path).unwrap()[8..].iter().all(|&b| b == 0));
        idx.append(Offset(15), FilePosition(5)).unwrap();
        assert_eq!(idx.last_offset(), Offset(15));
        idx.truncate().unwrap();
        assert!(idx.is_empty());
        assert_eq!(idx.last_offset(), Offset(0));
    }

    #[test]
    fn truncating_a_sealed_index_shrinks_its_file() {
        let dir = tempfile::tempdir().unwrap();
        let (mut idx, path) = new_index(dir.path(), 0, MAX);
        for o in 1..=4 {
            idx.append(Offset(o), FilePosition(o as u32)).unwrap();
        }
        idx.trim_to_valid_size().unwrap();
        assert!(!idx.is_writable());
        idx.truncate_to(Offset(3)).unwrap();
        assert_eq!(fs::metadata(&path).unwrap().len(), 16);
        drop(idx);
        let idx = OffsetIndex::open(&path, Offset(0), MAX, false).unwrap();
        assert_eq!(idx.entries(), 2);
    }

    #[test]
    fn an_unclean_full_size_file_reopens_with_the_written_entries() {
        let dir = tempfile::tempdir().unwrap();
        let (mut idx, path) = new_index(dir.path(), 0, MAX);
        idx.append(Offset(0), FilePosition(0)).unwrap();
        idx.append(Offset(3), FilePosition(300)).unwrap();
        idx.flush().unwrap();
        drop(idx); // no close: the file keeps its preallocated length, like after a crash
        let idx = OffsetIndex::open(&path, Offset(0), MAX, true).unwrap();
        assert_eq!(idx.entries(), 2);
        assert_eq!(idx.max_entries(), 10);
        assert_eq!(idx.lookup(Offset(9)), (Offset(3), FilePosition(300)));
    }

    #[test]
    fn a_crash_loses_only_the_pending_tail_and_flushed_entries_are_kafkas_bytes() {
        // Appended entries wait in the heap tail: a crash of the process before any flush
        // leaves the preallocated file all zeros (it reopens empty: the engine rebuilds an
        // active segment's indexes after an unclean shutdown). Flushed entries are Kafka's
        // bytes followed by zeros, and a clean close trims to exactly Kafka's file.
        let dir = tempfile::tempdir().unwrap();
        let max = 1024 * 1024;
        let (mut idx, path) = new_index(dir.path(), 100, max);
        idx.append(Offset(157), FilePosition(4154)).unwrap();
        idx.append(Offset(214), FilePosition(8258)).unwrap();
        assert_eq!(idx.lookup(Offset(300)), (Offset(214), FilePosition(8258)));
        drop(idx); // no close, no flush: like a crash of the process
        let bytes = fs::read(&path).unwrap();
        assert_eq!(bytes.len() as u64, max);
        assert!(bytes.iter().all(|&b| b == 0));
        let mut idx = OffsetIndex::open(&path, Offset(100), max, true).unwrap();
        assert_eq!(idx.entries(), 0);

        idx.append(Offset(157), FilePosition(4154)).unwrap();
        idx.append(Offset(214), FilePosition(8258)).unwrap();
        idx.flush().unwrap();
        drop(idx);
        let kafka = [
            0, 0, 0, 57, 0, 0, 0x10, 0x3a, //
            0, 0, 0, 114, 0, 0, 0x20, 0x42,
        ];
        let bytes = fs::read(&path).unwrap();
        assert_eq!(bytes[..16], kafka);
        assert!(bytes[16..].iter().all(|&b| b == 0));
        let mut idx = OffsetIndex::open(&path, Offset(100), max, true).unwrap();
        assert_eq!(idx.entries(), 2);
        assert_eq!(idx.last_offset(), Offset(214));
        idx.append(Offset(300), FilePosition(12000)).unwrap();
        idx.close().unwrap();
        let bytes = fs::read(&path).unwrap();
        assert_eq!(bytes[..16], kafka);
        assert_eq!(bytes[16..], [0, 0, 0, 200, 0, 0, 0x2e, 0xe0]);
    }

    #[test]
    fn a_full_pending_tail_reaches_the_file_at_the_next_reserve() {
        let dir = tempfile::tempdir().unwrap();
        let max = 1024 * 1024;
        let (mut idx, path) = new_index(dir.path(), 0, max);
        let per_tail = PENDING_MAX_BYTES / OFFSET_ENTRY_SIZE;
        let in_file = |path: &std::path::Path| {
            let bytes = fs::read(path).unwrap();
            count_nonzero_slots(&bytes)
        };
        for i in 0..per_tail as i64 {
            idx.reserve(1).unwrap();
            idx.append(Offset(i + 1), FilePosition(i as u32 * 10))
                .unwrap();
        }
        assert_eq!(in_file(&path), 0, "a tail that fits stays in memory");
        idx.reserve(1).unwrap();
        assert_eq!(
            in_file(&path),
            per_tail,
            "the next reserve writes the tail out"
        );
        idx.append(Offset(per_tail as i64 + 1), FilePosition(7))
            .unwrap();
        assert_eq!(idx.entries(), per_tail + 1);
        // Lookups span the file and the tail; truncation into the written part zeroes it.
        assert_eq!(idx.lookup(Offset(5)), (Offset(5), FilePosition(40)));
        assert_eq!(
            idx.lookup(Offset(per_tail as i64 + 9)),
            (Offset(per_tail as i64 + 1), FilePosition(7))
        );
        idx.truncate_to(Offset(11)).unwrap();
        assert_eq!(idx.entries(), 10);
        assert_eq!(in_file(&path), 10);
        idx.append(Offset(11), FilePosition(100)).unwrap();
        drop(idx);
        let idx = OffsetIndex::open(&path, Offset(0), max, true).unwrap();
        assert_eq!(
            idx.entries(),
            10,
            "the unflushed entry after the truncation is lost"
        );
    }

    #[test]
    fn the_last_entry_follows_appends_truncations_and_reopens() {
        let dir = tempfile::tempdir().unwrap();
        let (mut idx, path) = new_index(dir.path(), 0, MAX);
        assert_eq!(idx.raw_last_entry(), None);
        for (o, p) in [(1, 10), (2, 20), (3, 30)] {
            idx.append(Offset(o), FilePosition(p)).unwrap();
            assert_eq!(idx.last_offset(), Offset(o));
        }
        idx.truncate_to(Offset(3)).unwrap();
        assert_eq!(idx.last_offset(), Offset(2));
        // The order check runs against the new last entry, not the dropped one.
        idx.append(Offset(3), FilePosition(31)).unwrap();
        idx.trim_to_valid_size().unwrap();
        idx.truncate_to(Offset(2)).unwrap(); // sealed: shrinks the file
        assert_eq!(idx.last_offset(), Offset(1));
        drop(idx);
        let mut idx = OffsetIndex::open(&path, Offset(0), MAX, true).unwrap();
        assert_eq!(idx.last_offset(), Offset(1));
        idx.resize(MAX).unwrap();
        idx.truncate().unwrap();
        assert_eq!(idx.raw_last_entry(), None);
        idx.append(Offset(1), FilePosition(0)).unwrap();
        assert_eq!(idx.lookup(Offset(5)), (Offset(1), FilePosition(0)));
    }

    #[test]
    fn an_untrimmed_file_smaller_than_the_max_size_is_scanned_too() {
        // Preallocated under a smaller max size, then reopened after a crash with a larger one.
        let dir = tempfile::tempdir().unwrap();
        let (mut idx, path) = new_index(dir.path(), 0, 4 * 8);
        idx.append(Offset(2), FilePosition(20)).unwrap();
        idx.append(Offset(4), FilePosition(40)).unwrap();
        idx.flush().unwrap();
        drop(idx);
        let idx = OffsetIndex::open(&path, Offset(0), MAX, true).unwrap();
        assert_eq!((idx.entries(), idx.max_entries()), (2, 4));
        // A trimmed single (base, 0) entry is kept: one slot is never "unwritten".
        fs::write(&path, [0u8; 8]).unwrap();
        let idx = OffsetIndex::open(&path, Offset(0), MAX, false).unwrap();
        assert_eq!(idx.entries(), 1);
    }

    #[test]
    fn a_never_written_full_size_file_reopens_empty() {
        let dir = tempfile::tempdir().unwrap();
        let (idx, path) = new_index(dir.path(), 0, MAX);
        drop(idx);
        let idx = OffsetIndex::open(&path, Offset(0), MAX, false).unwrap();
        assert_eq!(idx.entries(), 0);
    }

    #[test]
    fn a_trimmed_file_reopens_with_length_over_eight_entries_and_resizes_for_appends() {
        let dir = tempfile::tempdir().unwrap();
        let (mut idx, path) = new_index(dir.path(), 0, MAX);
        idx.append(Offset(1), FilePosition(10)).unwrap();
        idx.close().unwrap();
        let mut idx = OffsetIndex::open(&path, Offset(0), MAX, true).unwrap();
        assert_eq!((idx.entries(), idx.max_entries()), (1, 1));
        assert!(idx.is_full());
        assert!(idx.resize(MAX).unwrap());
        assert!(!idx.resize(MAX).unwrap());
        idx.append(Offset(2), FilePosition(20)).unwrap();
        assert_eq!(fs::metadata(&path).unwrap().len(), MAX);
        assert_eq!(idx.entry(1), Some((Offset(2), FilePosition(20))));
    }

    #[test]
    fn resize_turns_a_sealed_index_writable_again() {
        let dir = tempfile::tempdir().unwrap();
        let (mut idx, _) = new_index(dir.path(), 0, MAX);
        idx.append(Offset(1), FilePosition(10)).unwrap();
        idx.trim_to_valid_size().unwrap();
        assert_eq!(idx.file_size_bytes(), 8);
        idx.resize(MAX).unwrap();
        assert!(idx.is_writable());
        idx.append(Offset(2), FilePosition(20)).unwrap();
        assert_eq!(idx.entries(), 2);
    }

    #[test]
    #[should_panic(expected = "append to read-only")]
    fn a_sealed_index_has_no_append() {
        let dir = tempfile::tempdir().unwrap();
        let (mut idx, _) = new_index(dir.path(), 0, MAX);
        idx.trim_to_valid_size().unwrap();
        let _ = idx.append(Offset(1), FilePosition(0));
    }

    #[test]
    #[should_panic(expected = "would drop some")]
    fn resizing_below_the_valid_entries_panics() {
        let dir = tempfile::tempdir().unwrap();
        let (mut idx, _) = new_index(dir.path(), 0, MAX);
        idx.append(Offset(1), FilePosition(0)).unwrap();
        idx.append(Offset(2), FilePosition(0)).unwrap();
        let _ = idx.resize(15);
    }

    #[test]
    fn a_length_that_is_not_whole_entries_fails_the_sanity_check() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("00000000000000000000.index");
        fs::write(&path, [0, 0, 0, 1, 0, 0, 0, 9, 0, 0, 0]).unwrap();
        let idx = OffsetIndex::open(&path, Offset(0), MAX, false).unwrap();
        assert_eq!(idx.entries(), 1);
        let err = idx.sanity_check().unwrap_err();
        assert!(matches!(err, Error::Corrupt { position: 8, .. }), "{err:?}");
    }

    #[test]
    fn a_last_offset_below_the_base_fails_the_sanity_check() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("00000000000000000050.index");
        fs::write(
            &path,
            [0, 0, 0, 1, 0, 0, 0, 9, 0xff, 0xff, 0xff, 0xfe, 0, 0, 0, 0],
        )
        .unwrap();
        let idx = OffsetIndex::open(&path, Offset(50), MAX, false).unwrap();
        let err = idx.sanity_check().unwrap_err();
        assert!(matches!(err, Error::Corrupt { position: 8, .. }), "{err:?}");
        assert_eq!(idx.entry(1), Some((Offset(48), FilePosition(0))));
    }

    #[test]
    fn rename_and_delete_move_and_remove_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let (mut idx, path) = new_index(dir.path(), 0, MAX);
        idx.append(Offset(1), FilePosition(1)).unwrap();
        let renamed = dir.path().join("00000000000000000000.index.deleted");
        idx.rename_to(&renamed).unwrap();
        assert!(!path.exists() && renamed.exists());
        assert_eq!(idx.path(), renamed);
        assert_eq!(idx.lookup(Offset(1)), (Offset(1), FilePosition(1)));
        assert!(idx.delete().unwrap());
        assert!(!renamed.exists());
    }

    #[test]
    fn lookup_is_exact_at_every_offset_on_both_sides_of_the_warm_section() {
        // 2000 entries: the warm tail is the last 1025, so the cold/warm boundary is slot 974.
        let dir = tempfile::tempdir().unwrap();
        let (mut idx, _) = new_index(dir.path(), 0, 2000 * 8);
        for i in 0..2000u32 {
            idx.append(Offset(2 * i64::from(i) + 1), FilePosition(i))
                .unwrap();
        }
        assert_eq!(idx.lookup(Offset(0)), (Offset(0), FilePosition(0)));
        for t in 1..4002i64 {
            let slot = ((t - 1) / 2).min(1999);
            let expected = (Offset(2 * slot + 1), FilePosition(slot as u32));
            assert_eq!(idx.lookup(Offset(t)), expected, "target {t}");
        }
        for cut in [1952i64, 1951, 1950, 1949] {
            idx.truncate_to(Offset(cut)).unwrap();
            assert_eq!(idx.last_offset(), Offset((cut - 2) | 1), "cut {cut}");
        }
    }

    proptest! {
        #[test]
        fn offset_entries_round_trip(rel in 0..=i32::MAX, pos in 0..=i32::MAX as u32) {
            let entry = OffsetEntry {
                relative_offset: RelativeOffset(rel),
                position: FilePosition(pos),
            };
            let mut bytes = [0u8; OFFSET_ENTRY_SIZE];
            entry.encode(&mut bytes);
            prop_assert_eq!(OffsetEntry::decode(&bytes), entry);
            prop_assert_eq!(&bytes[..4], &rel.to_be_bytes());
        }

        #[test]
        fn lookup_and_truncation_agree_with_a_linear_model(
            gaps in proptest::collection::vec(1i64..50, 0..1500),
            targets in proptest::collection::vec(0i64..80_000, 1..20),
        ) {
            let dir = tempfile::tempdir().unwrap();
            let base = 1000;
            let (mut idx, path) = new_index(dir.path(), base, 2000 * 8);
            let mut model = Vec::new();
            let mut offset = base;
            for (i, gap) in gaps.iter().enumerate() {
                offset += gap;
                idx.append(Offset(offset), FilePosition(i as u32 * 7)).unwrap();
                model.push((Offset(offset), FilePosition(i as u32 * 7)));
            }
            for &t in &targets {
                let expected = model.iter().rev().find(|(o, _)| o.get() <= base + t)
                    .copied().unwrap_or((Offset(base), FilePosition(0)));
                prop_assert_eq!(idx.lookup(Offset(base + t)), expected);
            }
            let cut = Offset(base + targets[0]);
            idx.truncate_to(cut).unwrap();
            model.retain(|(o, _)| *o < cut);
            idx.close().unwrap();
            let idx = OffsetIndex::open(&path, Offset(base), 2000 * 8, false).unwrap();
            idx.sanity_check().unwrap();
            let reread: Vec<_> = (0..idx.entries()).map(|i| idx.entry(i).unwrap()).collect();
            prop_assert_eq!(reread, model);
        }

        #[test]
        fn crashes_keep_a_prefix_with_every_flushed_entry(
            ops in proptest::collection::vec((0u8..20, 1i64..50), 1..1500),
        ) {
            // Appends (mostly after `reserve`, as the segment does, so the pending tail spills
            // to the file), truncations, flushes and crashes (drop, reopen writable) against
            // a model: lookups always agree with it, and a crash keeps a prefix of it that
            // holds at least every entry flushed (and not truncated away) before.
            let dir = tempfile::tempdir().unwrap();
            let base = 1000;
            let max = 4000 * 8;
            let (mut idx, path) = new_index(dir.path(), base, max);
            let mut model: Vec<(Offset, FilePosition)> = Vec::new();
            let mut flushed = 0usize;
            for (i, &(op, n)) in ops.iter().enumerate() {
                match op {
                    0 => {
                        let cut = model.len().saturating_sub(n as usize);
                        let to = model.get(cut).map_or(Offset(base + 1_000_000), |e| e.0);
                        idx.truncate_to(to).unwrap();
                        model.truncate(cut);
                        flushed = flushed.min(cut);
                    }
                    1 => {
                        idx.flush().unwrap();
                        flushed = model.len();
                    }
                    2 => {
                        drop(idx);
                        idx = OffsetIndex::open(&path, Offset(base), max, true).unwrap();
                        let kept = idx.entries();
                        prop_assert!(kept >= flushed && kept <= model.len(),
                            "{kept} entries after a crash, {flushed} flushed of {}", model.len());
                        model.truncate(kept);
                        flushed = kept;
                    }
                    _ => {
                        if model.len() + 1 >= max as usize / 8 {
                            continue;
                        }
                        if op != 3 {
                            idx.reserve(1).unwrap();
                        }
                        let offset = model.last().map_or(Offset(base), |e| e.0).get() + n;
                        let entry = (Offset(offset), FilePosition(i as u32 * 7));
                        idx.append(entry.0, entry.1).unwrap();
                        model.push(entry);
                    }
                }
                prop_assert_eq!(idx.entries(), model.len());
                let probe = Offset(base + (i as i64 * 37) % (model.len() as i64 * 50 + 1));
                let expected = model.iter().rev().find(|(o, _)| *o <= probe)
                    .copied().unwrap_or((Offset(base), FilePosition(0)));
                prop_assert_eq!(idx.lookup(probe), expected);
            }
            idx.close().unwrap();
            let idx = OffsetIndex::open(&path, Offset(base), max, false).unwrap();
            idx.sanity_check().unwrap();
            let reread: Vec<_> = (0..idx.entries()).map(|i| idx.entry(i).unwrap()).collect();
            prop_assert_eq!(reread, model);
        }

        #[test]
        fn any_file_opens_and_checks_without_panicking(
            bytes in proptest::collection::vec(any::<u8>(), 0..100),
            writable in any::<bool>(),
        ) {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("00000000000000000000.index");
            fs::write(&path, &bytes).unwrap();
            let idx = OffsetIndex::open(&path, Offset(0), 64, writable).unwrap();
            let _ = idx.sanity_check();
            let _ = idx.lookup(Offset(1 << 20));
            prop_assert!(idx.entries() <= bytes.len() / 8);
        }
    }
}
