//! Bug: `PartitionLog::open` completes every `.log.swap` (log/mod.rs, the swap loop), replacing
//! only old segments whose *base* lies inside the swap's offsets. Kafka's segment split
//! (`splitOverflowedSegment` → `replaceSegments`) renames its `.cleaned` files to `.swap` from the
//! highest offset down; a crash in between leaves `<mid>.log.swap` beside `<base>.log.cleaned` and
//! the intact old `<base>.log`. Kafka's `LogLoader` deletes such a swap (its base is above the
//! smallest `.cleaned` offset: an incomplete split) and keeps the old segment. Here the swap is
//! swapped in next to the old segment, which still holds the same offsets: two segments overlap,
//! and e.g. a truncation into the overlap leaves the truncated records readable in the older one.

use crate::common;

use common::*;
use mirrorlog_engine::log::{LeaderOrigin, ReplicaOrigin, Shutdown};
use mirrorlog_index::{LeaderEpoch, Offset};
use mirrorlog_segment::Compression;

#[test]
fn an_incomplete_split_swap_is_discarded() {
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
    // A split of the first segment into two halves, interrupted after the upper half was
    // renamed `.swap` and before the lower half (still `.cleaned`) was.
    let bytes: bytes::Bytes = std::fs::read(p(bases[0].get(), "log")).unwrap().into();
    let batches: Vec<_> = mirrorlog_segment::batch::Batches::new(bytes)
        .map(|b| b.unwrap())
        .collect();
    let half = batches.len() / 2;
    let mid = batches[half].base_offset();
    let mut low = vec![];
    let mut high = vec![];
    for (i, b) in batches.iter().enumerate() {
        if i < half { &mut low } else { &mut high }.extend_from_slice(b.as_bytes());
    }
    std::fs::write(p(bases[0].get(), "log.cleaned"), low).unwrap();
    std::fs::write(p(mid.get(), "log.swap"), high).unwrap();

    let mut log = open(dir.path(), small_config(), clock, Shutdown::Clean);
    let overlapping = log.segment_base_offsets() != bases;
    // What the overlap does: after a truncation inside it and new records at those offsets, a
    // read from the start serves the old segment's truncated records instead of the new ones.
    let target = Offset(mid.get() + 4);
    log.truncate_to(target).unwrap();
    log.append_as_leader(client_batch(2, T0), LeaderEpoch(1), LeaderOrigin::Client)
        .unwrap();
    let got: Vec<(i64, String)> = values(&log, Offset(0))
        .into_iter()
        .filter(|(o, _)| *o >= target.get())
        .collect();
    assert_eq!(
        got,
        vec![(target.get(), "v0".into()), (target.get() + 1, "v1".into())],
        "segments overlap after open: {overlapping}"
    );
}
