//! The transaction index (`<base offset>.txnindex`): the aborted transactions whose ABORT marker
//! lies in a segment (Kafka's `TransactionIndex`).
//!
//! A headerless sequence of 34-byte entries, each `version i16 (0) | producer id i64 | first
//! offset i64 | last offset i64 | last stable offset i64`, appended in strictly increasing last
//! offset. It is a plain file written with `std::fs` (not mapped: it is small and appended
//! rarely), created lazily on the first append — an absent file is an empty index.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::ops::ControlFlow;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::files::remove_if_exists;
use crate::types::{Offset, ProducerId};

/// Bytes per transaction-index entry.
pub const ABORTED_TXN_SIZE: usize = 34;
const _: () = assert!(ABORTED_TXN_SIZE == 2 + 8 + 8 + 8 + 8);

/// The entry version we write (Kafka's `AbortedTxn.CURRENT_VERSION`).
pub const ABORTED_TXN_VERSION: i16 = 0;

/// Entries read per `pread` while scanning.
const SCAN_CHUNK_ENTRIES: usize = 256;

/// An aborted transaction as recorded in the transaction index.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct AbortedTxn {
    /// The producer whose transaction was aborted.
    pub producer_id: ProducerId,
    /// The transaction's first offset.
    pub first_offset: Offset,
    /// The offset of the ABORT marker.
    pub last_offset: Offset,
    /// The last stable offset when the abort completed.
    pub last_stable_offset: Offset,
}

impl AbortedTxn {
    /// The entry's 34 bytes as Kafka writes them.
    pub fn encode(&self) -> [u8; ABORTED_TXN_SIZE] {
        let mut out = [0u8; ABORTED_TXN_SIZE];
        out[..2].copy_from_slice(&ABORTED_TXN_VERSION.to_be_bytes());
        out[2..10].copy_from_slice(&self.producer_id.get().to_be_bytes());
        out[10..18].copy_from_slice(&self.first_offset.get().to_be_bytes());
        out[18..26].copy_from_slice(&self.last_offset.get().to_be_bytes());
        out[26..34].copy_from_slice(&self.last_stable_offset.get().to_be_bytes());
        out
    }

    /// Decodes one entry; the error is the reason it was rejected.
    ///
    /// Kafka writes the version as an `int16` but reads it back as the first *byte*, and rejects
    /// only a version above 0. We read it the same way, so any file Kafka accepts, we accept.
    pub(crate) fn decode(bytes: &[u8]) -> Result<Self, String> {
        let long = |at: usize| i64::from_be_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
        let version = bytes[0] as i8;
        if i16::from(version) > ABORTED_TXN_VERSION {
            return Err(format!("unsupported aborted transaction version {version}"));
        }
        Ok(AbortedTxn {
            producer_id: ProducerId(long(2)),
            first_offset: Offset(long(10)),
            last_offset: Offset(long(18)),
            last_stable_offset: Offset(long(26)),
        })
    }
}

/// A segment's transaction index.
#[derive(Debug)]
pub struct TransactionIndex {
    path: PathBuf,
    start_offset: Offset,
    /// Open for reading and appending once the file exists.
    file: Option<File>,
    /// The last entry's last offset, to assert order on append.
    last_offset: Option<Offset>,
}

impl TransactionIndex {
    /// Opens the transaction index of the segment starting at `start_offset`. Does not create
    /// the file: that waits for the first [`append`](Self::append).
    pub fn open(path: impl Into<PathBuf>, start_offset: Offset) -> Result<Self> {
        let path = path.into();
        let file = match OpenOptions::new().read(true).append(true).open(&path) {
            Ok(file) => Some(file),
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) => return Err(Error::io("open", &path)(e)),
        };
        let mut index = TransactionIndex {
            path,
            start_offset,
            file,
            last_offset: None,
        };
        index.last_offset = index.read_last_offset()?;
        Ok(index)
    }

    /// The last offset of the last whole entry in the file, if any.
    fn read_last_offset(&self) -> Result<Option<Offset>> {
        let Some(file) = &self.file else {
            return Ok(None);
        };
        let whole = self.whole_entries_len(file)?;
        if whole == 0 {
            return Ok(None);
        }
        let mut bytes = [0u8; 8];
        file.read_exact_at(&mut bytes, whole - ABORTED_TXN_SIZE as u64 + 18)
            .map_err(Error::io("read", &self.path))?;
        Ok(Some(Offset(i64::from_be_bytes(bytes))))
    }

    /// The file length rounded down to whole entries.
    fn whole_entries_len(&self, file: &File) -> Result<u64> {
        let len = file
            .metadata()
            .map_err(Error::io("stat", &self.path))?
            .len();
        Ok(len - len % ABORTED_TXN_SIZE as u64)
    }

    /// The index file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The base offset of the segment this index belongs to.
    pub fn start_offset(&self) -> Offset {
        self.start_offset
    }

    /// The last offset of the last entry, if any.
    pub fn last_offset(&self) -> Option<Offset> {
        self.last_offset
    }

    /// The file's length in bytes (0 when it does not exist yet).
    pub fn size_bytes(&self) -> Result<u64> {
        match &self.file {
            Some(file) => Ok(file
                .metadata()
                .map_err(Error::io("stat", &self.path))?
                .len()),
            None => Ok(0),
        }
    }

    /// Appends `txn`, creating the file if needed.
    ///
    /// Panics when `txn.last_offset` is not greater than the previous entry's (index order is an
    /// invariant). A failed write is rolled back to the previous length (best effort) so that
    /// later entries stay aligned. Nothing is reserved ahead, so a full disk fails it too: an
    /// entry is written after its ABORT marker is in the log, so the caller must treat any
    /// failure as a storage failure of the log, as Kafka does (the segment poisons itself and
    /// the engine takes the data directory offline; recovery writes the entry again).
    pub fn append(&mut self, txn: AbortedTxn) -> Result<()> {
        if let Some(last) = self.last_offset {
            assert!(
                txn.last_offset > last,
                "transaction index {}: appending last offset {} after {last}; last offsets must \
                 strictly increase",
                self.path.display(),
                txn.last_offset
            );
        }
        if self.file.is_none() {
            let file = OpenOptions::new()
                .read(true)
                .append(true)
                .create(true)
                .open(&self.path)
                .map_err(Error::io("create", &self.path))?;
            self.file = Some(file);
        }
        let path = &self.path;
        let mut file = self.file.as_ref().expect("opened above");
        let previous_len = file.metadata().map_err(Error::io("stat", path))?.len();
        if let Err(source) = file.write_all(&txn.encode()) {
            // The write error is what matters; a failed rollback leaves a tail sanity_check sees.
            let _ = file.set_len(previous_len);
            return Err(Error::io("write", path)(source));
        }
        self.last_offset = Some(txn.last_offset);
        Ok(())
    }

    /// Calls `visit(position, entry)` for every whole entry in order until it breaks. A trailing
    /// partial entry is not visited (as in Kafka; [`sanity_check`](Self::sanity_check) reports
    /// it). Fails with [`Error::Corrupt`] on an entry of an unsupported version.
    fn scan(&self, mut visit: impl FnMut(u64, AbortedTxn) -> ControlFlow<()>) -> Result<()> {
        let Some(file) = &self.file else {
            return Ok(());
        };
        let whole = self.whole_entries_len(file)?;
        let mut buf = vec![0u8; ABORTED_TXN_SIZE * SCAN_CHUNK_ENTRIES];
        let mut position = 0u64;
        while position < whole {
            let n = (whole - position).min(buf.len() as u64) as usize;
            file.read_exact_at(&mut buf[..n], position)
                .map_err(Error::io("read", &self.path))?;
            for (i, bytes) in buf[..n].chunks_exact(ABORTED_TXN_SIZE).enumerate() {
                let at = position + (i * ABORTED_TXN_SIZE) as u64;
                let txn = AbortedTxn::decode(bytes)
                    .map_err(|reason| Error::corrupt(&self.path, at, reason))?;
                if visit(at, txn).is_break() {
                    return Ok(());
                }
            }
            position += n as u64;
        }
        Ok(())
    }

    /// Every entry, in file order.
    pub fn all_entries(&self) -> Result<Vec<AbortedTxn>> {
        let mut entries = Vec::new();
        self.scan(|_, txn| {
            entries.push(txn);
            ControlFlow::Continue(())
        })?;
        Ok(entries)
    }

    /// The aborted transactions a fetch from `fetch_offset` up to `upper_bound_offset` must
    /// report: every entry with `last_offset ≥ fetch_offset` and `first_offset <
    /// upper_bound_offset`. The `bool` is `true` when an entry's last stable offset reached
    /// `upper_bound_offset`: no later segment can hold a relevant abort, so the caller stops
    /// scanning segments (Kafka's `TxnIndexSearchResult.isComplete`).
    pub fn collect_aborted_txns(
        &self,
        fetch_offset: Offset,
        upper_bound_offset: Offset,
    ) -> Result<(Vec<AbortedTxn>, bool)> {
        let mut aborted = Vec::new();
        let mut complete = false;
        self.scan(|_, txn| {
            if txn.last_offset >= fetch_offset && txn.first_offset < upper_bound_offset {
                aborted.push(txn);
            }
            if txn.last_stable_offset >= upper_bound_offset {
                complete = true;
                return ControlFlow::Break(());
            }
            ControlFlow::Continue(())
        })?;
        Ok((aborted, complete))
    }

    /// Drops every entry whose last offset is ≥ `offset` (entries are ordered, so this cuts the
    /// file at the first such entry).
    pub fn truncate_to(&mut self, offset: Offset) -> Result<()> {
        let mut cut = None;
        let mut new_last = None;
        self.scan(|position, txn| {
            if txn.last_offset >= offset {
                cut = Some(position);
                return ControlFlow::Break(());
            }
            new_last = Some(txn.last_offset);
            ControlFlow::Continue(())
        })?;
        if let (Some(position), Some(file)) = (cut, &self.file) {
            file.set_len(position)
                .map_err(Error::io("truncate", &self.path))?;
            self.last_offset = new_last;
        }
        Ok(())
    }

    /// Drops every entry (the file stays, empty).
    pub fn reset(&mut self) -> Result<()> {
        if let Some(file) = &self.file {
            file.set_len(0).map_err(Error::io("truncate", &self.path))?;
        }
        self.last_offset = None;
        Ok(())
    }

    /// Makes appended entries durable (fsync); a no-op while the file does not exist.
    pub fn flush(&self) -> Result<()> {
        match &self.file {
            Some(file) => file.sync_all().map_err(Error::io("fsync", &self.path)),
            None => Ok(()),
        }
    }

    /// Checks the file is whole entries of a known version, each with a last offset ≥ the
    /// segment's start offset (Kafka's check) and strictly increasing (ours). Fails with
    /// [`Error::Corrupt`] at the first bad byte.
    pub fn sanity_check(&self) -> Result<()> {
        let len = self.size_bytes()?;
        let size = ABORTED_TXN_SIZE as u64;
        if !len.is_multiple_of(size) {
            return Err(Error::corrupt(
                &self.path,
                len - len % size,
                format!("length {len} is not a multiple of the {size}-byte entry size"),
            ));
        }
        let mut problem = None;
        let mut previous: Option<Offset> = None;
        self.scan(|position, txn| {
            let reason = if txn.last_offset < self.start_offset {
                Some(format!(
                    "last offset {} of {txn:?} is below the segment start offset {}",
                    txn.last_offset, self.start_offset
                ))
            } else if previous.is_some_and(|p| txn.last_offset <= p) {
                Some(format!(
                    "last offset {} does not increase past {}",
                    txn.last_offset,
                    previous.expect("checked")
                ))
            } else {
                None
            };
            previous = Some(txn.last_offset);
            match reason {
                Some(reason) => {
                    problem = Some((position, reason));
                    ControlFlow::Break(())
                }
                None => ControlFlow::Continue(()),
            }
        })?;
        match problem {
            Some((position, reason)) => Err(Error::corrupt(&self.path, position, reason)),
            None => Ok(()),
        }
    }

    /// Renames the file if it exists; later appends go to the new path either way.
    pub fn rename_to(&mut self, new_path: impl Into<PathBuf>) -> Result<()> {
        let new_path = new_path.into();
        if self.file.is_some() {
            fs::rename(&self.path, &new_path).map_err(Error::io("rename", &self.path))?;
        }
        self.path = new_path;
        Ok(())
    }

    /// Deletes the file. Returns `false` if there was none.
    pub fn delete(self) -> Result<bool> {
        drop(self.file);
        remove_if_exists(&self.path)
    }

    /// Closes the file. Nothing is buffered in user space, so this only releases the handle;
    /// call [`flush`](Self::flush) first for durability.
    pub fn close(self) {
        drop(self);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn txn(pid: i64, first: i64, last: i64, lso: i64) -> AbortedTxn {
        AbortedTxn {
            producer_id: ProducerId(pid),
            first_offset: Offset(first),
            last_offset: Offset(last),
            last_stable_offset: Offset(lso),
        }
    }

    fn index_in(dir: &Path) -> TransactionIndex {
        TransactionIndex::open(dir.join("00000000000000000000.txnindex"), Offset(0)).unwrap()
    }

    #[test]
    fn entry_bytes_are_kafkas_layout() {
        let bytes = txn(0x0102, 5, 0x0a0b, -1).encode();
        let mut expected = vec![0, 0];
        expected.extend_from_slice(&[0, 0, 0, 0, 0, 0, 1, 2]);
        expected.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 5]);
        expected.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0x0a, 0x0b]);
        expected.extend_from_slice(&[0xff; 8]);
        assert_eq!(bytes.as_slice(), expected.as_slice());
    }

    #[test]
    fn the_file_is_created_by_the_first_append_only() {
        let dir = tempfile::tempdir().unwrap();
        let mut idx = index_in(dir.path());
        assert!(!idx.path().exists());
        assert_eq!(idx.all_entries().unwrap(), vec![]);
        assert_eq!(
            idx.collect_aborted_txns(Offset(0), Offset(10)).unwrap(),
            (vec![], false)
        );
        idx.sanity_check().unwrap();
        idx.truncate_to(Offset(0)).unwrap();
        idx.append(txn(1, 0, 3, 4)).unwrap();
        idx.flush().unwrap();
        assert_eq!(fs::metadata(idx.path()).unwrap().len(), 34);
    }

    #[test]
    fn entries_survive_reopen_and_keep_their_order_check() {
        let dir = tempfile::tempdir().unwrap();
        let mut idx = index_in(dir.path());
        idx.append(txn(1, 0, 3, 4)).unwrap();
        idx.append(txn(2, 1, 7, 8)).unwrap();
        idx.close();
        let idx = index_in(dir.path());
        assert_eq!(idx.last_offset(), Some(Offset(7)));
        assert_eq!(
            idx.all_entries().unwrap(),
            vec![txn(1, 0, 3, 4), txn(2, 1, 7, 8)]
        );
    }

    #[test]
    #[should_panic(expected = "strictly increase")]
    fn appending_a_non_increasing_last_offset_panics_even_after_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let mut idx = index_in(dir.path());
        idx.append(txn(1, 0, 3, 4)).unwrap();
        drop(idx);
        let mut idx = index_in(dir.path());
        let _ = idx.append(txn(2, 1, 3, 4));
    }

    #[test]
    fn collect_follows_kafkas_overlap_and_stop_rules() {
        let dir = tempfile::tempdir().unwrap();
        let mut idx = index_in(dir.path());
        idx.append(txn(1, 0, 10, 11)).unwrap();
        idx.append(txn(2, 5, 20, 21)).unwrap();
        idx.append(txn(3, 25, 30, 40)).unwrap();
        idx.append(txn(4, 35, 45, 50)).unwrap();
        // lastOffset >= fetch (11) excludes pid 1; firstOffset < 100 keeps the rest.
        let (found, complete) = idx.collect_aborted_txns(Offset(11), Offset(100)).unwrap();
        assert_eq!(
            found,
            vec![txn(2, 5, 20, 21), txn(3, 25, 30, 40), txn(4, 35, 45, 50)]
        );
        assert!(!complete);
        // Upper bound 26: pid 3 starts before it (kept); its LSO 40 >= 26 stops the scan.
        let (found, complete) = idx.collect_aborted_txns(Offset(0), Offset(26)).unwrap();
        assert_eq!(
            found,
            vec![txn(1, 0, 10, 11), txn(2, 5, 20, 21), txn(3, 25, 30, 40)]
        );
        assert!(complete);
        // Upper bound 5: pid 2 begins at 5, not below it; pid 1's LSO 11 stops at once.
        let (found, complete) = idx.collect_aborted_txns(Offset(0), Offset(5)).unwrap();
        assert_eq!(found, vec![txn(1, 0, 10, 11)]);
        assert!(complete);
    }

    #[test]
    fn truncate_to_drops_entries_with_last_offset_at_or_above() {
        let dir = tempfile::tempdir().unwrap();
        let mut idx = index_in(dir.path());
        for (pid, last) in [(1, 10), (2, 20), (3, 30)] {
            idx.append(txn(pid, 0, last, last)).unwrap();
        }
        idx.truncate_to(Offset(31)).unwrap();
        assert_eq!(idx.all_entries().unwrap().len(), 3);
        idx.truncate_to(Offset(20)).unwrap();
        assert_eq!(idx.all_entries().unwrap(), vec![txn(1, 0, 10, 10)]);
        assert_eq!(idx.last_offset(), Some(Offset(10)));
        idx.append(txn(4, 0, 15, 15)).unwrap();
        idx.truncate_to(Offset(0)).unwrap();
        assert_eq!(idx.all_entries().unwrap(), vec![]);
        assert_eq!(idx.last_offset(), None);
        idx.append(txn(5, 0, 1, 1)).unwrap();
        idx.reset().unwrap();
        assert_eq!(idx.size_bytes().unwrap(), 0);
    }

    #[test]
    fn a_partial_trailing_entry_fails_the_sanity_check_but_reads_like_kafka() {
        let dir = tempfile::tempdir().unwrap();
        let mut idx = index_in(dir.path());
        idx.append(txn(1, 0, 10, 10)).unwrap();
        drop(idx);
        let path = dir.path().join("00000000000000000000.txnindex");
        let mut bytes = fs::read(&path).unwrap();
        bytes.extend_from_slice(&txn(2, 0, 20, 20).encode()[..20]);
        fs::write(&path, &bytes).unwrap();
        let idx = index_in(dir.path());
        let err = idx.sanity_check().unwrap_err();
        assert!(
            matches!(err, Error::Corrupt { position: 34, .. }),
            "{err:?}"
        );
        assert_eq!(idx.all_entries().unwrap(), vec![txn(1, 0, 10, 10)]);
        assert_eq!(idx.last_offset(), Some(Offset(10)));
    }

    #[test]
    fn an_unknown_version_is_corrupt() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("00000000000000000000.txnindex");
        let mut bytes = txn(1, 0, 10, 10).encode().to_vec();
        bytes.extend_from_slice(&txn(1, 0, 11, 10).encode());
        bytes[34] = 1;
        fs::write(&path, &bytes).unwrap();
        let idx = index_in(dir.path());
        let err = idx.all_entries().unwrap_err();
        assert!(
            matches!(err, Error::Corrupt { position: 34, .. }),
            "{err:?}"
        );
        assert!(idx.sanity_check().is_err());
        // Like Kafka, only the first byte is the version: 0x00 0x01 reads as version 0.
        bytes[34] = 0;
        bytes[35] = 1;
        fs::write(&path, &bytes).unwrap();
        assert_eq!(index_in(dir.path()).all_entries().unwrap().len(), 2);
    }

    #[test]
    fn entries_below_the_start_offset_or_out_of_order_fail_the_sanity_check() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("00000000000000000100.txnindex");
        fs::write(&path, txn(1, 0, 99, 99).encode()).unwrap();
        let idx = TransactionIndex::open(&path, Offset(100)).unwrap();
        assert!(matches!(
            idx.sanity_check(),
            Err(Error::Corrupt { position: 0, .. })
        ));
        let mut bytes = txn(1, 100, 110, 110).encode().to_vec();
        bytes.extend_from_slice(&txn(2, 100, 110, 110).encode());
        fs::write(&path, &bytes).unwrap();
        let idx = TransactionIndex::open(&path, Offset(100)).unwrap();
        assert!(matches!(
            idx.sanity_check(),
            Err(Error::Corrupt { position: 34, .. })
        ));
    }

    #[test]
    fn rename_moves_the_file_and_delete_removes_it() {
        let dir = tempfile::tempdir().unwrap();
        let mut idx = index_in(dir.path());
        idx.append(txn(1, 0, 10, 10)).unwrap();
        let new_path = dir.path().join("moved.txnindex");
        idx.rename_to(&new_path).unwrap();
        idx.append(txn(1, 11, 12, 12)).unwrap();
        assert_eq!(fs::metadata(&new_path).unwrap().len(), 68);
        assert!(idx.delete().unwrap());
        assert!(!new_path.exists());
        assert!(!index_in(dir.path()).delete().unwrap());
    }

    fn arb_txn() -> impl Strategy<Value = AbortedTxn> {
        (any::<i64>(), any::<i64>(), any::<i64>(), any::<i64>())
            .prop_map(|(p, f, l, s)| txn(p, f, l, s))
    }

    proptest! {
        #[test]
        fn aborted_txn_entries_round_trip(t in arb_txn()) {
            prop_assert_eq!(AbortedTxn::decode(&t.encode()), Ok(t));
        }

        #[test]
        fn appended_entries_read_back_and_collect_like_a_linear_model(
            specs in proptest::collection::vec((0i64..5, 1i64..20, 0i64..30), 0..300),
            fetch in 0i64..3000,
            upper in 0i64..3000,
        ) {
            let dir = tempfile::tempdir().unwrap();
            let mut idx = index_in(dir.path());
            let mut model = Vec::new();
            let mut last = 0;
            for (i, (len_back, gap, lso_ahead)) in specs.into_iter().enumerate() {
                last += gap;
                let t = txn(i as i64, last - len_back, last, last + lso_ahead);
                idx.append(t).unwrap();
                model.push(t);
            }
            prop_assert_eq!(idx.all_entries().unwrap(), model.clone());
            idx.sanity_check().unwrap();
            let mut expected = Vec::new();
            let mut complete = false;
            for t in &model {
                if t.last_offset.get() >= fetch && t.first_offset.get() < upper {
                    expected.push(*t);
                }
                if t.last_stable_offset.get() >= upper {
                    complete = true;
                    break;
                }
            }
            prop_assert_eq!(
                idx.collect_aborted_txns(Offset(fetch), Offset(upper)).unwrap(),
                (expected, complete)
            );
        }

        #[test]
        fn any_bytes_read_without_panicking(
            bytes in proptest::collection::vec(any::<u8>(), 0..200)
        ) {
            let dir = tempfile::tempdir().unwrap();
            fs::write(dir.path().join("00000000000000000000.txnindex"), &bytes).unwrap();
            let idx = index_in(dir.path());
            let _ = idx.sanity_check();
            let _ = idx.all_entries();
            let _ = idx.collect_aborted_txns(Offset(0), Offset(i64::MAX));
        }
    }
}
