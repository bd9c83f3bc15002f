//! A batch with attribute bits above 6 set (Kafka defines none of them) was refused
//! `CORRUPT_MESSAGE` by the segment's header check, from a client, a follower or a mirror alike,
//! and a segment holding one was truncated there by recovery. Kafka's `ensureValid` checks only
//! size and CRC and its `LogValidator` no attribute bit, so it appends such a batch in place and
//! serves it as it came. Here too now, on every path: leader (client), follower and mirror
//! appends, and the recovery scan after a crash.

use crate::common;

use bytes::Bytes;
use common::*;
use mirrorlog_engine::log::{FetchIsolation, LeaderOrigin, ReplicaOrigin, Shutdown};
use mirrorlog_index::{LeaderEpoch, Offset};
use mirrorlog_segment::Compression;
use mirrorlog_segment::batch::{Batches, compute_crc, field};

/// Bits 7 and 15 of `batch`'s attributes set, its CRC made valid again.
const UNDEFINED_BITS: i16 = 0x0080 | i16::MIN;

fn with_undefined_bits(batch: Bytes) -> Bytes {
    let mut b = batch.to_vec();
    let attributes =
        i16::from_be_bytes([b[field::ATTRIBUTES], b[field::ATTRIBUTES + 1]]) | UNDEFINED_BITS;
    b[field::ATTRIBUTES..field::ATTRIBUTES + 2].copy_from_slice(&attributes.to_be_bytes());
    let crc = compute_crc(&b);
    b[field::CRC..field::CRC + 4].copy_from_slice(&crc.to_be_bytes());
    Bytes::from(b)
}

/// Every batch of the log: (base offset, attributes).
fn batches(log: &mirrorlog_engine::log::PartitionLog) -> Vec<(i64, i16)> {
    let info = log
        .read(Offset(0), 1 << 20, FetchIsolation::LogEnd, true)
        .unwrap();
    let bytes = info.records.unwrap().slice.read_all().unwrap();
    Batches::new(bytes)
        .map(|b| {
            let b = b.unwrap();
            (b.base_offset().get(), b.attributes())
        })
        .collect()
}

#[test]
fn leader_follower_and_recovery_keep_a_batch_with_undefined_attribute_bits() {
    let dir = tempfile::tempdir().unwrap();
    let clk = clock();
    let mut log = open(dir.path(), small_config(), clk.clone(), Shutdown::Clean);
    let client = with_undefined_bits(client_batch(2, T0));
    log.append_as_leader(client, LeaderEpoch(0), LeaderOrigin::Client)
        .unwrap();
    let compressed = with_undefined_bits(replica_batch(2, 3, 0, Compression::Lz4, T0));
    log.append_as_follower(compressed, ReplicaOrigin::Replication)
        .unwrap();
    let check = |log: &mirrorlog_engine::log::PartitionLog| {
        assert_eq!(log.log_end_offset(), Offset(5));
        assert_eq!(
            batches(log),
            vec![(0, UNDEFINED_BITS), (2, UNDEFINED_BITS | 3)],
            "kept as they came (codec lz4 = 3)"
        );
        let got: Vec<i64> = values(log, Offset(0)).iter().map(|(o, _)| *o).collect();
        assert_eq!(got, [0, 1, 2, 3, 4]);
    };
    check(&log);
    drop(log);

    check(&reopen_unclean_intact(dir.path(), clk));
}

#[test]
fn a_mirror_appends_a_batch_with_undefined_attribute_bits() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), small_config(), clock(), Shutdown::Clean);
    let batch = with_undefined_bits(replica_batch(0, 2, 0, Compression::None, T0));
    log.append_as_follower(batch, ReplicaOrigin::Mirror)
        .unwrap();
    assert_eq!(batches(&log), vec![(0, UNDEFINED_BITS)]);
}
