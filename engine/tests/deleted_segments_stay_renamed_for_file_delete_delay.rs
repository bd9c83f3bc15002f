//! `file.delete.delay.ms` (default 60000): Kafka renames a deleted segment's files to
//! `*.deleted` at once (`LocalLog.deleteSegmentFiles`: `changeFileSuffixes("", ".deleted")`) and
//! removes them once the delay has passed (a scheduled `delete-file` task); an open removes
//! the `.deleted` files it finds. The engine accepted the setting but removed the files at once.

use crate::common;

use common::*;
use mirrorlog_engine::log::{LeaderOrigin, PartitionLog, Shutdown};
use mirrorlog_engine::manager::{LogManager, LogManagerConfig};
use mirrorlog_index::{LeaderEpoch, Offset, TopicId};
use mirrorlog_segment::io::{PwriteStorage, Storage};
use std::path::Path;
use std::sync::Arc;

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

fn deleted(dir: &Path) -> Vec<String> {
    names(dir)
        .into_iter()
        .filter(|n| n.ends_with(".deleted"))
        .collect()
}

/// Appends until the log has `segments` segments, records at `T0`.
fn fill(log: &mut PartitionLog, segments: usize) {
    while log.segment_count() < segments {
        log.append_as_leader(client_batch(3, T0), LeaderEpoch(0), LeaderOrigin::Client)
            .unwrap();
    }
    let leo = log.log_end_offset();
    log.update_high_watermark(leo);
}

#[test]
fn retention_renames_a_segments_files_and_the_upkeep_removes_them_after_the_delay() {
    let d = tempfile::tempdir().unwrap();
    let clk = clock();
    let mut cfg = LogManagerConfig::new(d.path());
    let mut c = small_config();
    c.retention_ms = 3_600_000;
    assert_eq!(c.file_delete_delay_ms, 60_000, "Kafka's default");
    cfg.default_log_config = c.clone();
    let storage: Arc<dyn Storage> = Arc::new(PwriteStorage::new());
    let mgr = LogManager::open(cfg, storage, clk.clone()).unwrap().0;
    let h = mgr.create(&orders(0), TopicId([7; 16]), c).unwrap();
    let pdir = d.path().join("orders-0");
    let (first, slice) = {
        let mut log = h.write();
        fill(&mut log, 3);
        let first = log.segment_base_offsets()[0];
        // A fetch being served holds the first segment's bytes.
        let read = log
            .read(
                Offset(0),
                1 << 20,
                mirrorlog_engine::log::FetchIsolation::HighWatermark,
                true,
            )
            .unwrap();
        (first, read.records.unwrap().slice)
    };
    let expected = slice.read_all().unwrap();
    clk.advance(2 * 3_600_000);
    let n = mgr.maintain().unwrap();
    assert_eq!(n, 3, "every segment is past retention.ms");
    let stem = format!("{:020}", first.get());
    let renamed = deleted(&pdir);
    for suffix in [".log.deleted", ".index.deleted", ".timeindex.deleted"] {
        assert!(
            renamed.contains(&format!("{stem}{suffix}")),
            "{suffix} of the deleted segment is there for file.delete.delay.ms: {:?}",
            names(&pdir)
        );
    }
    assert!(!names(&pdir).contains(&format!("{stem}.log")));
    assert_eq!(slice.read_all().unwrap(), expected, "the fetch reads on");
    clk.advance(59_999);
    mgr.maintain().unwrap();
    assert_eq!(deleted(&pdir), renamed, "not before the delay");
    clk.advance(1);
    mgr.maintain().unwrap();
    assert_eq!(
        deleted(&pdir),
        Vec::<String>::new(),
        "removed once it passed"
    );
    assert_eq!(
        slice.read_all().unwrap(),
        expected,
        "an open file outlives its name"
    );
}

#[test]
fn a_delay_of_zero_removes_the_files_at_once() {
    let d = tempfile::tempdir().unwrap();
    let clk = clock();
    let mut c = small_config();
    c.file_delete_delay_ms = 0;
    let mut log = open(d.path(), c, clk.clone(), Shutdown::Clean);
    fill(&mut log, 3);
    let start = log.segment_base_offsets()[1];
    log.maybe_increment_log_start_offset(start).unwrap();
    log.delete_old_segments().unwrap();
    assert_eq!(log.segment_base_offsets()[0], start);
    assert_eq!(deleted(d.path()), Vec::<String>::new());
}

#[test]
fn truncation_and_log_start_moves_rename_too_and_an_open_removes_what_is_left() {
    let d = tempfile::tempdir().unwrap();
    let clk = clock();
    let mut log = open(d.path(), small_config(), clk.clone(), Shutdown::Clean);
    fill(&mut log, 4);
    let bases = log.segment_base_offsets();
    // DeleteRecords past the first segment, then the retention check that deletes it.
    log.maybe_increment_log_start_offset(bases[1]).unwrap();
    log.delete_old_segments().unwrap();
    // A truncation into the second segment: the third and the active one go.
    log.truncate_to(Offset(bases[1].get() + 1)).unwrap();
    let renamed: Vec<String> = deleted(d.path())
        .into_iter()
        .filter(|n| n.ends_with(".log.deleted"))
        .collect();
    let want: Vec<String> = [bases[0], bases[2], bases[3]]
        .iter()
        .map(|b| format!("{:020}.log.deleted", b.get()))
        .collect();
    assert_eq!(renamed, want);
    // Closed before the delay passed: the next open removes them, as Kafka's `LogLoader`.
    log.close().unwrap();
    let log = open(d.path(), small_config(), clk.clone(), Shutdown::Clean);
    assert_eq!(deleted(d.path()), Vec::<String>::new());
    assert_eq!(log.segment_base_offsets(), vec![bases[1]]);
}

#[test]
fn a_segment_renamed_deleted_stays_deleted_after_a_crash() {
    use mirrorlog_engine::log::OpenOffsets;
    use mirrorlog_segment::io::{SimStorage, TornTail};
    let d = tempfile::tempdir().unwrap();
    let sim = SimStorage::new();
    let clk = clock();
    let mut log = open_with(
        Arc::new(sim.clone()),
        d.path(),
        small_config(),
        clk.clone(),
        Shutdown::Clean,
        OpenOffsets::default(),
    );
    fill(&mut log, 3);
    log.flush().unwrap();
    let bases = log.segment_base_offsets();
    log.maybe_increment_log_start_offset(bases[1]).unwrap();
    log.delete_old_segments().unwrap();
    let first_log = d.path().join(format!("{:020}.log", bases[0].get()));
    let renamed = d.path().join(format!("{:020}.log.deleted", bases[0].get()));
    // Durable before the move returned: a crash keeps the rename, not the segment.
    let crashed = sim.crash(TornTail::None);
    assert!(crashed.file_bytes(&first_log).is_none());
    assert!(crashed.file_bytes(&renamed).is_some());
    drop(log);
    let offsets = OpenOffsets {
        log_start_offset: bases[1],
        ..OpenOffsets::default()
    };
    let log = open_with(
        Arc::new(crashed.clone()),
        d.path(),
        small_config(),
        clk,
        Shutdown::Unclean,
        offsets,
    );
    assert_eq!(log.segment_base_offsets()[0], bases[1]);
    assert!(crashed.file_bytes(&renamed).is_none(), "an open removes it");
    assert_eq!(deleted(d.path()), Vec::<String>::new());
}
