//! Bug: completing an interrupted segment swap (log/mod.rs, the `.log.swap` loop) deletes the
//! indexes only of old segments whose `.log` is still listed. When the old segment at the swap's
//! own base has already lost its `.log` (Kafka renames a segment's files to `.deleted` one at a
//! time, the `.log` first; mirrorlog's own completion removes the `.log` before its indexes), its
//! `.index`/`.timeindex` stay and, the swap becoming `<base>.log`, are taken as the new segment's
//! indexes: lookups land at positions of the old file. Kafka's
//! `LogLoader.removeTempFilesAndCollectSwapFiles` deletes the indexes of every `.swap`'s base.

use crate::common;

use common::*;
use mirrorlog_engine::log::{FetchIsolation, ReplicaOrigin, Shutdown};
use mirrorlog_index::{LeaderEpoch, Offset};
use mirrorlog_segment::{BatchBuilder, Compression};

fn batch(base: i64, values: &[Vec<u8>]) -> Vec<u8> {
    let mut b = BatchBuilder::new()
        .base_offset(Offset(base))
        .partition_leader_epoch(LeaderEpoch(0));
    for (i, v) in values.iter().enumerate() {
        b.append(
            mirrorlog_index::TimestampMs(T0 + i as i64),
            None,
            Some(v.as_slice()),
            &[],
        );
    }
    b.build().into_bytes().to_vec()
}

#[test]
fn a_swapped_in_segment_never_uses_the_old_segments_indexes() {
    let dir = tempfile::tempdir().unwrap();
    let clock = clock();
    let mut log = open(dir.path(), small_config(), clock.clone(), Shutdown::Clean);
    for i in 0..200 {
        log.append_as_follower(
            replica_batch(i * 2, 2, 0, Compression::None, T0),
            ReplicaOrigin::Replication,
        )
        .unwrap();
    }
    let bases = log.segment_base_offsets();
    assert!(bases.len() >= 3);
    log.close().unwrap();
    let p = |b: i64, ext: &str| dir.path().join(format!("{b:020}.{ext}"));
    let b0 = bases[0].get();
    // The cleaned copy of the first segment: the second batch's values shrink, a batch near the
    // end grows by as much, so every batch in between sits a few bytes earlier than before.
    let bytes: bytes::Bytes = std::fs::read(p(b0, "log")).unwrap().into();
    let old: Vec<_> = mirrorlog_segment::batch::Batches::new(bytes)
        .map(|b| b.unwrap())
        .collect();
    // The batch the old offset index's last entry names stays where it was (the index passes
    // its checks); `k` is the batch before it.
    let index = std::fs::read(p(b0, "index")).unwrap();
    let last_pos = u32::from_be_bytes(index[index.len() - 4..].try_into().unwrap()) as u64;
    let k = old.iter().position(|b| b.position() == last_pos).unwrap() - 1;
    assert!(k > 3);
    let mut swap = vec![];
    let mut shrink = 0usize;
    for (i, b) in old.iter().enumerate() {
        let base = b.base_offset().get();
        let bytes = if i == 1 {
            let nb = batch(base, &[vec![], vec![]]);
            shrink = b.as_bytes().len() - nb.len();
            nb
        } else if i == k {
            let want = b.as_bytes().len() + shrink;
            (0..200)
                .map(|pad| {
                    batch(
                        base,
                        &[format!("r{base}").into_bytes(), vec![b'x'; 3 + pad]],
                    )
                })
                .find(|nb| nb.len() == want)
                .expect("a padding that restores the size")
        } else {
            b.as_bytes().to_vec()
        };
        swap.extend(bytes);
    }
    assert!(shrink > 0);
    std::fs::write(p(b0, "log.swap"), swap).unwrap();
    // Kafka crashed after renaming the old segment's `.log` to `.deleted`, before its indexes.
    std::fs::rename(p(b0, "log"), p(b0, "log.deleted")).unwrap();

    let log = open(dir.path(), small_config(), clock, Shutdown::Clean);
    for b in &old[2..k] {
        let at = b.base_offset();
        let info = log
            .read(at, 1 << 20, FetchIsolation::LogEnd, true)
            .unwrap_or_else(|e| panic!("reading at {at}: {e}"));
        let bytes = info.records.expect("records").slice.read_all().unwrap();
        let first = mirrorlog_segment::batch::Batches::new(bytes)
            .next()
            .expect("a batch")
            .unwrap_or_else(|e| panic!("reading at {at}: {e}"));
        assert_eq!(
            first.base_offset(),
            at,
            "the read at {at} starts at its batch"
        );
    }
}
