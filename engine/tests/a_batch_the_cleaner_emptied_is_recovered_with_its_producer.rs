//! A replica of a compacted Kafka log holds v2 batches the cleaner emptied but kept for their
//! producer's state (Kafka's `MemoryRecords.filterTo` writes such a batch with
//! `DefaultRecordBatch.writeEmptyHeader`: the 61-byte header alone, record count 0, the original
//! `lastOffsetDelta`, base timestamp −1, the producer id, epoch and base sequence kept), with
//! gaps between batches. After a crash, recovery scans them as Kafka's does: the log ends where
//! it ended, an emptied batch at the end included, and the producers they carry are rebuilt
//! (last sequence and last offset of the original batch), as a Kafka follower rebuilds them.

use crate::common;

use bytes::Bytes;
use common::*;
use mirrorlog_engine::log::ReplicaOrigin;
use mirrorlog_index::{LeaderEpoch, Offset, ProducerEpoch, ProducerId, Sequence, TimestampMs};
use mirrorlog_segment::batch::{LOG_OVERHEAD, RECORD_BATCH_OVERHEAD, compute_crc, field};
use mirrorlog_segment::{BatchBuilder, Compression};

/// Producer `pid`'s batch of `n` records at `base` (sequences from `seq`), emptied.
fn emptied_batch(pid: i64, seq: i32, base: i64, n: i64) -> Bytes {
    let mut b = BatchBuilder::new()
        .base_offset(Offset(base))
        .partition_leader_epoch(LeaderEpoch(0))
        .producer(ProducerId(pid), ProducerEpoch(0), Sequence(seq));
    for i in 0..n {
        b.append(TimestampMs(T0 + base + i), Some(b"gone"), Some(b"v"), &[]);
    }
    let mut empty = b.build().into_bytes()[..RECORD_BATCH_OVERHEAD].to_vec();
    let length = (RECORD_BATCH_OVERHEAD - LOG_OVERHEAD) as i32;
    empty[field::BATCH_LENGTH..][..4].copy_from_slice(&length.to_be_bytes());
    empty[field::BASE_TIMESTAMP..][..8].copy_from_slice(&(-1i64).to_be_bytes());
    empty[field::RECORDS_COUNT..][..4].copy_from_slice(&0i32.to_be_bytes());
    let crc = compute_crc(&empty);
    empty[field::CRC..][..4].copy_from_slice(&crc.to_be_bytes());
    Bytes::from(empty)
}

/// (last sequence, last offset) of producer `pid`.
fn producer(log: &mirrorlog_engine::log::PartitionLog, pid: i64) -> (Sequence, Offset) {
    let e = log
        .producer_state()
        .entry(ProducerId(pid))
        .unwrap_or_else(|| panic!("producer {pid} known"));
    (e.last_seq(), e.batches.back().unwrap().last_offset)
}

#[test]
fn emptied_batches_and_gaps_are_recovered_with_their_producers() {
    let dir = tempfile::tempdir().unwrap();
    let clk = clock();
    let mut log = open(
        dir.path(),
        small_config(),
        clk.clone(),
        mirrorlog_engine::log::Shutdown::Clean,
    );
    for batch in [
        replica_batch(0, 3, 0, Compression::None, T0),
        emptied_batch(4242, 0, 10, 5),
        replica_batch(20, 2, 0, Compression::None, T0 + 20),
        emptied_batch(77, 7, 30, 3),
    ] {
        log.append_as_follower(batch, ReplicaOrigin::Mirror)
            .unwrap();
    }
    let check = |log: &mirrorlog_engine::log::PartitionLog| {
        assert_eq!(log.log_end_offset(), Offset(33));
        assert_eq!(producer(log, 4242), (Sequence(4), Offset(14)));
        assert_eq!(producer(log, 77), (Sequence(9), Offset(32)));
    };
    check(&log);
    drop(log);

    check(&reopen_unclean_intact(dir.path(), clk));
}
