//! Fuzzes the read paths of the segment index files, the bytes `mirrorlog` trusts least after the
//! log itself: an offset index (`.index`) and a time index (`.timeindex`) written to a temporary
//! file and opened read-only (entry counting, `sanity_check`, every entry, lookups), and a
//! transaction index (`.txnindex`: `all_entries`, `collect_aborted_txns`, `sanity_check`).
//!
//! Appends and truncations are not fuzzed: their order checks panic on purpose (programmer
//! errors), and they never read bytes the process did not write itself.
//!
//! Input: 16 bytes of parameters (base offset, max index size, lookup targets), then the file.
//! No input may panic, hang or allocate without bound.
#![no_main]

use std::path::{Path, PathBuf};

use libfuzzer_sys::fuzz_target;
use mirrorlog_index::txn_index::ABORTED_TXN_SIZE;
use mirrorlog_index::{Offset, OffsetIndex, TimeIndex, TimestampMs, TransactionIndex};

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, bytes).expect("write the fuzzed file");
    path
}

fuzz_target!(|data: &[u8]| {
    let (params, file) = data.split_at(data.len().min(16));
    let mut p = [0u8; 16];
    p[..params.len()].copy_from_slice(params);
    let word = |at: usize| u32::from_be_bytes(p[at..at + 4].try_into().unwrap());
    // Small, large, negative and too large base offsets (the last two are rejected by `open`).
    let base = Offset(i64::from_be_bytes(p[..8].try_into().unwrap()) >> (p[7] & 63));
    // A max size that is sometimes too small for one entry, sometimes smaller than the file.
    let max_size = u64::from(word(8));
    let target = i64::from(word(12) as i32);

    // A fresh directory per input, removed when it drops at the end of the input.
    let dir = tempfile::tempdir().expect("a temporary directory");
    let index_path = write(dir.path(), "00000000000000000000.index", file);
    if let Ok(index) = OffsetIndex::open(&index_path, base, max_size, false) {
        let _ = index.sanity_check();
        assert!(index.entries() <= index.max_entries());
        assert_eq!(index.valid_size_bytes(), index.entries() as u64 * 8);
        for i in 0..index.entries() {
            let (offset, _position) = index.entry(i).expect("a valid entry");
            let (found, _) = index.lookup(offset);
            // Lookups return an entry at or below the target (or the base offset).
            assert!(
                found <= offset || found == index.base_offset(),
                "{found} > {offset}"
            );
        }
        assert!(index.entry(index.entries()).is_none());
        for t in [target, i64::MIN, i64::MAX, base.get()] {
            let _ = index.lookup(Offset(t));
        }
        let _ = (index.last_offset(), index.is_full(), index.raw_last_entry());
    }

    let time_path = write(dir.path(), "00000000000000000000.timeindex", file);
    if let Ok(index) = TimeIndex::open(&time_path, base, max_size, false) {
        let _ = index.sanity_check();
        assert!(index.entries() <= index.max_entries());
        for i in 0..index.entries() {
            let _ = index.entry(i).expect("a valid entry");
        }
        for t in [target, i64::MIN, i64::MAX, -1, 0] {
            let _ = index.lookup(TimestampMs(t));
        }
        let _ = (index.last_entry(), index.last_offset(), index.is_full());
    }

    let txn_path = write(dir.path(), "00000000000000000000.txnindex", file);
    if let Ok(index) = TransactionIndex::open(&txn_path, base) {
        let _ = index.sanity_check();
        let all = index.all_entries();
        if let Ok(all) = &all {
            assert!(all.len() <= file.len() / ABORTED_TXN_SIZE);
            assert_eq!(all.last().map(|t| t.last_offset), index.last_offset());
        }
        for (fetch, upper) in [
            (target, i64::MAX),
            (base.get(), target),
            (i64::MIN, i64::MIN),
        ] {
            if let Ok((aborted, _)) = index.collect_aborted_txns(Offset(fetch), Offset(upper)) {
                assert!(aborted.len() <= file.len() / ABORTED_TXN_SIZE);
            }
        }
        let _ = index.size_bytes();
    }
});
