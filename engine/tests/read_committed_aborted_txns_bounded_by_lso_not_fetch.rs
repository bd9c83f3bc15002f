//! A READ_COMMITTED read must report the aborted transactions overlapping the bytes it returns,
//! as Kafka's `LocalLog.read` does (`collectAbortedTransactions(startOffset,
//! fetchUpperBoundOffset)`, the upper bound being the first offset after the fetched bytes).
//! The engine used the last stable offset as the upper bound instead, so a small fetch from the
//! start of a log reports — and scans the transaction index of every segment for — every aborted
//! transaction up to the LSO: the response grows with the log, not with `max_bytes`.

use crate::common;

use common::*;
use mirrorlog_engine::log::FetchIsolation;
use mirrorlog_index::Offset;

#[test]
fn a_small_read_committed_fetch_reports_only_aborts_overlapping_its_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let log = fifty_aborted_txns_every_batch_indexed(dir.path());
    // One batch's worth: the first transactional batch only.
    let r = log
        .read(Offset(0), 1, FetchIsolation::TxnCommitted, true)
        .unwrap();
    let bytes = r.records.unwrap().slice.read_all().unwrap();
    let batches: Vec<_> = mirrorlog_segment::batch::Batches::new(bytes)
        .map(|b| b.unwrap())
        .collect();
    assert_eq!(batches.len(), 1);
    let fetched_end = batches.last().unwrap().next_offset();
    let aborted = r.aborted_transactions.unwrap();
    let beyond: Vec<_> = aborted
        .iter()
        .filter(|t| t.first_offset > fetched_end)
        .collect();
    assert!(
        beyond.is_empty(),
        "the read returned offsets below {fetched_end} but reported {} aborted transactions \
         (of {}) that start after them, e.g. {:?}",
        beyond.len(),
        aborted.len(),
        beyond.first()
    );
}
