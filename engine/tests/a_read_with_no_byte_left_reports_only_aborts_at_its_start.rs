//! A read with a limit of 0 bytes (a partition after others filled a Fetch response) returns
//! nothing; Kafka's `LogSegment.read` answers it from the segment holding the start offset
//! (`adjustedMaxSize == 0`), so `LocalLog.read` stops there and bounds the aborted transactions
//! it reports at the start's position (`fetchUpperBoundOffset(startPosition, 0)`). The engine
//! read on through every later segment and reported, READ_COMMITTED, every aborted transaction
//! up to the last stable offset: each starved partition of each fetch scanned its whole
//! backlog's transaction indexes and listed all of it, beside no records.

use crate::common;

use common::*;
use mirrorlog_engine::log::FetchIsolation;
use mirrorlog_index::Offset;

#[test]
fn a_read_committed_read_of_zero_bytes_reports_no_later_aborts() {
    let dir = tempfile::tempdir().unwrap();
    let log = fifty_aborted_txns_every_batch_indexed(dir.path());
    for start in [0, 40] {
        let r = log
            .read(Offset(start), 0, FetchIsolation::TxnCommitted, false)
            .unwrap();
        assert!(r.records.is_none(), "no bytes, no records");
        let aborted = r
            .aborted_transactions
            .expect("READ_COMMITTED lists its aborts");
        let later: Vec<_> = aborted
            .iter()
            .filter(|t| t.first_offset.get() > start)
            .collect();
        assert!(
            later.is_empty(),
            "from {start}: {} aborted transactions (of {}) start after a read of nothing, \
             e.g. {:?}",
            later.len(),
            aborted.len(),
            later.first()
        );
    }
}
