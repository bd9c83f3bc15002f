//! Bug: on a clean open, a middle segment whose index is missing is recovered; when that
//! recovery truncates it (a corrupt batch), it becomes the active segment and "everything after
//! a truncated segment is gone" — but the last segment, already opened as the active segment
//! because its own indexes were fine, is only dropped (log/mod.rs: `active = Some(seg)`), never
//! deleted. Its `.log` stays on disk: the next open finds it again and the log jumps over the
//! truncated range (a gap, records served past a corruption point), and the live log's next
//! rolls collide with it.

use crate::common;

use common::*;
use mirrorlog_engine::log::Shutdown;

#[test]
fn truncating_a_middle_segment_deletes_the_last_segment_too() {
    let dir = tempfile::tempdir().unwrap();
    let clock = clock();
    let bases = closed_replica_log(dir.path(), clock.clone());
    // The second segment loses its offset index and has a flipped bit in its third batch.
    let bad = corrupt_third_batch(dir.path(), bases[1]);
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
