//! A deleted segment's producer snapshot: Kafka's `deleteSegments` calls
//! `deleteProducerSnapshots(deletable, asyncDelete = true)`, which renames each deleted
//! segment's snapshot `<base>.snapshot.deleted` (`removeAndMarkSnapshotForDeletion`) and removes
//! it once `file.delete.delay.ms` has passed, with the segment's other files; `truncateTo` does
//! the same for the segments a truncation deletes. The engine renamed the segment's files but
//! removed the snapshot at once.

use crate::common;

use common::*;
use mirrorlog_engine::log::Shutdown;
use mirrorlog_index::Offset;
use std::path::Path;

fn snapshots(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".snapshot"))
        .collect();
    v.sort();
    v
}

#[test]
fn the_snapshot_is_renamed_deleted_and_removed_with_the_segment_after_the_delay() {
    let d = tempfile::tempdir().unwrap();
    let clk = clock();
    let c = small_config();
    assert_eq!(c.file_delete_delay_ms, 60_000, "Kafka's default");
    let mut log = open(d.path(), c, clk.clone(), Shutdown::Clean);
    append_producer_42(&mut log, 0, 4);
    log.roll(Offset(4)).unwrap();
    append_producer_42(&mut log, 4, 8);
    log.roll(Offset(8)).unwrap();
    append_producer_42(&mut log, 8, 10);
    log.update_high_watermark(Offset(10));
    assert!(
        snapshots(d.path()).contains(&format!("{:020}.snapshot", 4)),
        "a snapshot at the roll: {:?}",
        snapshots(d.path())
    );
    log.maybe_increment_log_start_offset(Offset(8)).unwrap();
    assert_eq!(log.delete_old_segments().unwrap(), 2);
    let names = snapshots(d.path());
    assert!(
        names.contains(&format!("{:020}.snapshot.deleted", 4)),
        "the deleted segment's snapshot stays renamed: {names:?}"
    );
    assert!(!names.contains(&format!("{:020}.snapshot", 4)));
    assert!(
        names.contains(&format!("{:020}.snapshot", 8)),
        "the first remaining segment's stays"
    );
    assert!(
        std::fs::read_dir(d.path())
            .unwrap()
            .any(|e| e.unwrap().file_name() == *format!("{:020}.log.deleted", 4)),
        "beside its segment's files"
    );
    clk.advance(59_999);
    log.remove_deleted_files().unwrap();
    assert_eq!(snapshots(d.path()), names, "not before the delay");
    clk.advance(1);
    log.remove_deleted_files().unwrap();
    assert_eq!(
        snapshots(d.path()),
        vec![format!("{:020}.snapshot", 8)],
        "removed with the segment's files once it passed"
    );
}

#[test]
fn a_truncation_renames_the_snapshots_of_the_segments_it_deletes() {
    let d = tempfile::tempdir().unwrap();
    let clk = clock();
    let mut log = open(d.path(), small_config(), clk.clone(), Shutdown::Clean);
    append_producer_42(&mut log, 0, 4);
    log.roll(Offset(4)).unwrap();
    append_producer_42(&mut log, 4, 8);
    log.roll(Offset(8)).unwrap();
    append_producer_42(&mut log, 8, 10);
    log.truncate_to(Offset(2)).unwrap();
    let renamed: Vec<String> = [4, 8]
        .iter()
        .map(|o| format!("{o:020}.snapshot.deleted"))
        .collect();
    assert_eq!(
        snapshots(d.path()),
        renamed,
        "the deleted segments' snapshots stay renamed"
    );
    clk.advance(60_000);
    log.remove_deleted_files().unwrap();
    assert_eq!(snapshots(d.path()), Vec::<String>::new());
}
