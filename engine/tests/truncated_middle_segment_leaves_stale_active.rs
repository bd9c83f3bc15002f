//! Bug: on a clean open, a middle segment whose index is missing is recovered; when that
//! recovery truncates it (a corrupt batch), it becomes the active segment and "everything after
//! a truncated segment is gone" — but the last segment, already opened as the active segment
//! because its own indexes were fine, is only dropped (log/mod.rs: `active = Some(seg)`), never
//! deleted. Its `.log` stays on disk: the next open finds it again and the log jumps over the
//! truncated range (a gap, records served past a corruption point), and the live log's next
//! rolls collide with it.

mod common;

use common::*;
use mirrorlog_engine::log::{ReplicaOrigin, Shutdown};
use mirrorlog_segment::Compression;

#[test]
fn truncating_a_middle_segment_deletes_the_last_segment_too() {
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
    assert!(bases.len() >= 4);
    log.close().unwrap();
    // The second segment loses its offset index and has a flipped bit in its third batch.
    let victim = dir.path().join(format!("{:020}.log", bases[1].get()));
    let mut bytes = std::fs::read(&victim).unwrap();
    let batches: Vec<_> = mirrorlog_segment::batch::Batches::new(bytes.clone().into())
        .map(|b| b.unwrap())
        .collect();
    let bad = &batches[2];
    bytes[bad.position() as usize + 40] ^= 0x01;
    std::fs::write(&victim, &bytes).unwrap();
    std::fs::remove_file(dir.path().join(format!("{:020}.index", bases[1].get()))).unwrap();

    let log = open(dir.path(), small_config(), clock.clone(), Shutdown::Clean);
    assert_eq!(log.log_end_offset(), bad.base_offset());
    assert_eq!(log.segment_base_offsets(), bases[..2].to_vec());
    let last = dir
        .path()
        .join(format!("{:020}.log", bases.last().unwrap().get()));
    log.close().unwrap();
    assert!(
        !last.exists(),
        "the last segment, after the truncation point, is still on disk"
    );
    let log = open(dir.path(), small_config(), clock, Shutdown::Clean);
    assert_eq!(
        log.log_end_offset(),
        bad.base_offset(),
        "records after the truncation point came back"
    );
}
