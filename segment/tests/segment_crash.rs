//! Scenario: crashes and injected faults on the simulated backend. Only a completed sync makes
//! bytes durable; a crash keeps durable bytes plus a chosen torn tail. After every crash the
//! segment is reopened and recovered: the log must be a prefix of what was appended, hold every
//! batch acknowledged by a completed flush, never a torn or corrupt batch, and its indexes must be
//! consistent. Every injected fault surfaces as an error naming the file and the operation and
//! damages nothing that was already durable.

mod common;

use bytes::Bytes;
use common::batches;
use mirrorlog_index::Offset;
use mirrorlog_segment::io::{
    Fault, FaultKind, IoOp, SimStorage, Storage, TornTail, create_dir_all_durably,
};
use mirrorlog_segment::segment::{
    ActiveSegment, LOG_SUFFIX, SegmentConfig, SegmentError, segment_path,
};
use std::path::Path;
use std::sync::Arc;

fn config() -> SegmentConfig {
    SegmentConfig {
        index_interval_bytes: 300,
        index_bytes_max: 8 * 1024,
        ..SegmentConfig::default()
    }
}

/// Appends `bs` one by one, flushing after each, until something fails. Returns how many were
/// acknowledged (append and flush both returned Ok).
fn workload(storage: Arc<dyn Storage>, dir: &Path, bs: &[Bytes]) -> usize {
    let Ok(mut seg) = ActiveSegment::create(storage, dir, Offset(0), config(), 0) else {
        return 0;
    };
    let mut acked = 0;
    for b in bs {
        if seg.append(b.clone()).is_err() || seg.flush().is_err() {
            break;
        }
        acked += 1;
    }
    acked
}

/// Reopens after a crash and recovers; checks the prefix property and index consistency.
/// Returns how many batches survived.
fn recover_and_check(storage: Arc<dyn Storage>, dir: &Path, bs: &[Bytes], acked: usize) -> usize {
    if !storage.exists(&segment_path(dir, Offset(0), LOG_SUFFIX)) {
        assert_eq!(acked, 0, "an acknowledged segment vanished");
        return 0;
    }
    let mut seg = ActiveSegment::open_for_recovery(storage, dir, Offset(0), config(), 0).unwrap();
    let mut seen = 0usize;
    let report = seg
        .recover(|_, b| {
            assert_eq!(
                b.as_bytes(),
                &bs[seen],
                "recovered batch {seen} differs from what was appended"
            );
            seen += 1;
            Ok(())
        })
        .unwrap();
    assert_eq!(report.batches as usize, seen);
    assert!(
        seen >= acked,
        "lost acknowledged batches: kept {seen}, acknowledged {acked}"
    );
    let want_len: usize = bs[..seen].iter().map(Bytes::len).sum();
    assert_eq!(seg.size_bytes() as usize, want_len, "no torn bytes remain");
    assert_eq!(seg.log_file().len().unwrap() as usize, want_len);
    seg.sanity_check().unwrap();
    let next: i64 = if seen == 0 {
        0
    } else {
        bs[..seen]
            .iter()
            .map(|b| {
                mirrorlog_segment::RecordBatch::new(b.clone())
                    .unwrap()
                    .records_count() as i64
            })
            .sum()
    };
    assert_eq!(seg.next_offset(), Offset(next));
    for o in 0..next {
        let loc = seg.find_batch(Offset(o)).unwrap().unwrap();
        assert!(loc.base_offset.get() <= o && o <= loc.last_offset.get());
    }
    // The recovered segment takes appends again.
    if seen < bs.len() {
        seg.append(bs[seen].clone()).unwrap();
        seg.flush().unwrap();
    }
    seen
}

#[test]
fn a_crash_at_every_sync_point_recovers_a_prefix_with_every_acknowledged_batch() {
    let bs = batches(0, 12, 3, 120, 1_000);
    // Count the sync points of a full run.
    let total = {
        let sim = SimStorage::new();
        let dir = tempfile::tempdir().unwrap();
        create_dir_all_durably(&sim, dir.path()).unwrap();
        assert_eq!(workload(Arc::new(sim.clone()), dir.path(), &bs), bs.len());
        sim.syncs_completed()
    };
    assert!(total as usize > bs.len());
    for k in 0..=total {
        for torn in [0usize, 1, 17, 61, 400] {
            let sim = SimStorage::new();
            let dir = tempfile::tempdir().unwrap();
            create_dir_all_durably(&sim, dir.path()).unwrap();
            sim.halt_after_syncs(k);
            let acked = workload(Arc::new(sim.clone()), dir.path(), &bs);
            let tail = if torn == 0 {
                TornTail::None
            } else {
                TornTail::KeepUnsynced {
                    file_contains: LOG_SUFFIX.into(),
                    bytes: torn,
                }
            };
            let crashed = sim.crash(tail);
            recover_and_check(Arc::new(crashed), dir.path(), &bs, acked);
        }
    }
}

#[test]
fn recovery_truncates_at_the_first_corrupt_batch_and_reports_it() {
    let bs = batches(0, 8, 2, 100, 1_000);
    let sim = SimStorage::new();
    let dir = tempfile::tempdir().unwrap();
    create_dir_all_durably(&sim, dir.path()).unwrap();
    assert_eq!(workload(Arc::new(sim.clone()), dir.path(), &bs), bs.len());
    // Corrupt batch 5 in place (a bit flip inside its records).
    let pos: usize = bs[..5].iter().map(Bytes::len).sum();
    let path = segment_path(dir.path(), Offset(0), LOG_SUFFIX);
    let f = sim
        .open(&path, mirrorlog_segment::io::OpenMode::ReadWrite)
        .unwrap();
    let mut byte = [0u8; 1];
    f.read_exact_at(&mut byte, pos as u64 + 70).unwrap();
    f.write_at(Bytes::copy_from_slice(&[byte[0] ^ 0x10]), pos as u64 + 70)
        .unwrap();
    let mut seg =
        ActiveSegment::open_for_recovery(Arc::new(sim.clone()), dir.path(), Offset(0), config(), 0)
            .unwrap();
    let report = seg.recover(|_, _| Ok(())).unwrap();
    assert_eq!(report.batches, 5);
    assert_eq!(report.valid_bytes, pos as u64);
    assert_eq!(report.last_offset, Some(Offset(9)));
    let why = report.stopped_by.unwrap();
    assert!(
        why.contains(&format!("position {pos}")) && why.contains("crc mismatch"),
        "{why}"
    );
    assert_eq!(sim.file_bytes(&path).unwrap().len(), pos);
    assert_eq!(seg.next_offset(), Offset(10));
}

fn assert_names_log_and_op(err: &SegmentError, op: IoOp) {
    match err {
        SegmentError::Io(e) => {
            assert_eq!(e.op, op, "{err}");
            assert!(
                e.path
                    .to_string_lossy()
                    .ends_with("00000000000000000000.log"),
                "{err}"
            );
        }
        other => panic!("expected an I/O error naming the log, got {other}"),
    }
}

#[test]
fn every_injected_fault_is_a_structured_error_and_durable_data_survives() {
    let bs = batches(0, 6, 2, 200, 1_000);
    let cases = [
        (IoOp::WriteAt, FaultKind::Eio),
        (IoOp::WriteAt, FaultKind::NoSpace),
        (IoOp::WriteAt, FaultKind::ShortWrite { bytes: 50 }),
        (IoOp::SyncData, FaultKind::SyncFails),
        (IoOp::SyncData, FaultKind::Eio),
    ];
    for (op, kind) in cases {
        let sim = SimStorage::new();
        let dir = tempfile::tempdir().unwrap();
        create_dir_all_durably(&sim, dir.path()).unwrap();
        let storage: Arc<dyn Storage> = Arc::new(sim.clone());
        let mut seg =
            ActiveSegment::create(storage.clone(), dir.path(), Offset(0), config(), 0).unwrap();
        for b in &bs[..3] {
            seg.append(b.clone()).unwrap();
        }
        seg.flush().unwrap();
        sim.inject(Fault::new(op, kind.clone()).on_path(LOG_SUFFIX));
        let err = seg
            .append(bs[3].clone())
            .and_then(|_| seg.flush())
            .unwrap_err();
        assert_names_log_and_op(&err, op);
        if matches!(kind, FaultKind::NoSpace) {
            assert!(
                matches!(&err, SegmentError::Io(e) if e.is_no_space()),
                "{err}"
            );
        }
        if matches!(kind, FaultKind::NoSpace) {
            // Out of space while writing: nothing of the append is in the file and the segment
            // stays usable — the next append (space returned) lands where the failed one would.
            seg.append(bs[3].clone()).unwrap();
            seg.flush().unwrap();
            drop(seg);
            let crashed: Arc<dyn Storage> = Arc::new(sim.crash(TornTail::None));
            assert_eq!(recover_and_check(crashed, dir.path(), &bs, 4), 4);
            continue;
        }
        // After any other failure the segment refuses further writes until recovered.
        let again = seg.append(bs[4].clone()).unwrap_err();
        assert!(
            matches!(again, SegmentError::Failed { .. }),
            "{kind:?}: {again}"
        );
        drop(seg);
        // Crash, reopen, recover: the three flushed batches are intact.
        let crashed: Arc<dyn Storage> = Arc::new(sim.crash(TornTail::None));
        let kept = recover_and_check(crashed, dir.path(), &bs, 3);
        assert_eq!(kept, 3, "{kind:?}");
    }
}

#[test]
fn a_segment_opened_for_recovery_refuses_appends_until_recovered() {
    let bs = batches(0, 3, 2, 50, 1_000);
    let sim = SimStorage::new();
    let dir = tempfile::tempdir().unwrap();
    create_dir_all_durably(&sim, dir.path()).unwrap();
    assert_eq!(workload(Arc::new(sim.clone()), dir.path(), &bs), 3);
    let storage: Arc<dyn Storage> = Arc::new(sim);
    let mut seg =
        ActiveSegment::open_for_recovery(storage, dir.path(), Offset(0), config(), 0).unwrap();
    let more = batches(6, 1, 1, 10, 2_000).remove(0);
    assert!(matches!(
        seg.append(more.clone()),
        Err(SegmentError::Failed { .. })
    ));
    seg.recover(|_, _| Ok(())).unwrap();
    assert_eq!(seg.next_offset(), Offset(6));
    seg.append(more).unwrap();
}
