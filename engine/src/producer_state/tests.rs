use super::*;

fn data(pid: i64, epoch: i16, seq: i32, first: i64, n: i64, txn: bool) -> BatchInfo {
    BatchInfo {
        producer_id: ProducerId(pid),
        producer_epoch: ProducerEpoch(epoch),
        base_sequence: Sequence(seq),
        last_sequence: Sequence(seq).increment(n as i32 - 1),
        base_offset: Offset(first),
        last_offset: Offset(first + n - 1),
        max_timestamp: TimestampMs(1000 + first),
        first_timestamp: TimestampMs(1000 + first),
        transactional: txn,
        control: None,
    }
}

fn marker(pid: i64, epoch: i16, offset: i64, commit: bool, coordinator_epoch: i32) -> BatchInfo {
    BatchInfo {
        producer_id: ProducerId(pid),
        producer_epoch: ProducerEpoch(epoch),
        base_sequence: Sequence::NONE,
        last_sequence: Sequence::NONE,
        base_offset: Offset(offset),
        last_offset: Offset(offset),
        max_timestamp: TimestampMs(1000 + offset),
        first_timestamp: TimestampMs(1000 + offset),
        transactional: true,
        control: Some(ControlKind::EndTxn {
            commit,
            coordinator_epoch,
        }),
    }
}

fn reset(offset: i64) -> BatchInfo {
    BatchInfo {
        producer_id: ProducerId::NONE,
        producer_epoch: ProducerEpoch::NONE,
        base_sequence: Sequence::NONE,
        last_sequence: Sequence::NONE,
        base_offset: Offset(offset),
        last_offset: Offset(offset),
        max_timestamp: TimestampMs(0),
        first_timestamp: TimestampMs(0),
        transactional: false,
        control: Some(ControlKind::MirrorPidReset),
    }
}

fn leader(
    m: &mut ProducerStateManager,
    b: &BatchInfo,
) -> Result<Option<CompletedTxn>, ProducerStateError> {
    let t = m.transition(b, AppendOrigin::Client)?;
    Ok(m.commit(t, b.last_offset))
}

#[test]
fn in_order_sequences_are_accepted_and_gaps_rejected() {
    let mut m = ProducerStateManager::new(None, i64::MAX);
    leader(&mut m, &data(7, 0, 0, 0, 3, false)).unwrap();
    leader(&mut m, &data(7, 0, 3, 3, 2, false)).unwrap();
    let err = leader(&mut m, &data(7, 0, 9, 5, 1, false)).unwrap_err();
    assert!(
        matches!(
            err,
            ProducerStateError::OutOfOrderSequence {
                sequence: Sequence(9),
                last: Sequence(4),
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(m.entry(ProducerId(7)).unwrap().last_seq(), Sequence(4));
}

#[test]
fn a_retried_batch_is_a_duplicate_with_its_original_offsets() {
    let mut m = ProducerStateManager::new(None, i64::MAX);
    for i in 0..6 {
        leader(&mut m, &data(7, 0, i * 2, i as i64 * 2, 2, false)).unwrap();
    }
    // The last five batches are remembered; the first one has been dropped.
    let t = m
        .transition(&data(7, 0, 4, 100, 2, false), AppendOrigin::Client)
        .unwrap();
    assert_eq!(
        t,
        Transition::Duplicate(BatchMetadata {
            last_seq: Sequence(5),
            last_offset: Offset(5),
            offset_delta: 1,
            timestamp: TimestampMs(1004)
        })
    );
    let t = m.transition(&data(7, 0, 0, 100, 2, false), AppendOrigin::Client);
    assert!(matches!(
        t,
        Err(ProducerStateError::OutOfOrderSequence { .. })
    ));
}

#[test]
fn an_older_epoch_is_fenced_for_clients_and_logged_for_replicas() {
    let mut m = ProducerStateManager::new(None, i64::MAX);
    leader(&mut m, &data(7, 3, 0, 0, 1, false)).unwrap();
    let err = leader(&mut m, &data(7, 2, 1, 1, 1, false)).unwrap_err();
    assert!(matches!(
        err,
        ProducerStateError::InvalidProducerEpoch { .. }
    ));
    assert!(
        m.replay(&data(7, 2, 1, 1, 1, false), AppendOrigin::Mirror)
            .is_none()
    );
}

#[test]
fn a_new_epoch_must_start_at_sequence_zero() {
    let mut m = ProducerStateManager::new(None, i64::MAX);
    leader(&mut m, &data(7, 0, 0, 0, 3, false)).unwrap();
    assert!(matches!(
        leader(&mut m, &data(7, 1, 3, 3, 1, false)),
        Err(ProducerStateError::OutOfOrderSequence {
            new_epoch: true,
            ..
        })
    ));
    leader(&mut m, &data(7, 1, 0, 3, 1, false)).unwrap();
}

#[test]
fn transactions_open_complete_and_move_the_lso() {
    let mut m = ProducerStateManager::new(None, i64::MAX);
    leader(&mut m, &data(1, 0, 0, 0, 2, true)).unwrap();
    leader(&mut m, &data(2, 0, 0, 2, 2, true)).unwrap();
    assert_eq!(m.first_unstable_offset(), Some(Offset(0)));
    // A non-transactional write inside an open transaction is refused.
    assert!(matches!(
        leader(&mut m, &data(1, 0, 2, 4, 1, false)),
        Err(ProducerStateError::InvalidTxnState { .. })
    ));
    let c = leader(&mut m, &marker(1, 0, 4, false, 5)).unwrap().unwrap();
    assert_eq!(
        c,
        CompletedTxn {
            producer_id: ProducerId(1),
            first_offset: Offset(0),
            last_offset: Offset(4),
            is_aborted: true
        }
    );
    // Producer 2's transaction is still open: the LSO for producer 1's abort stops at its start.
    assert_eq!(m.last_stable_offset(&c), Offset(2));
    m.complete_txn(&c);
    assert_eq!(
        m.first_unstable_offset(),
        Some(Offset(0)),
        "unreplicated until the HW passes"
    );
    m.on_high_watermark_updated(Offset(5));
    assert_eq!(m.first_unstable_offset(), Some(Offset(2)));
    let c2 = leader(&mut m, &marker(2, 0, 5, true, 5)).unwrap().unwrap();
    assert_eq!(m.last_stable_offset(&c2), Offset(6));
    m.complete_txn(&c2);
    m.on_high_watermark_updated(Offset(6));
    assert_eq!(m.first_unstable_offset(), None);
}

#[test]
fn stale_coordinator_epochs_are_fenced() {
    let mut m = ProducerStateManager::new(None, i64::MAX);
    leader(&mut m, &data(1, 0, 0, 0, 1, true)).unwrap();
    leader(&mut m, &marker(1, 0, 1, true, 9)).unwrap();
    let t = m.transition(&marker(1, 0, 2, true, 8), AppendOrigin::Coordinator);
    assert!(matches!(
        t,
        Err(ProducerStateError::CoordinatorFenced {
            epoch: 8,
            current: 9,
            ..
        })
    ));
    // An empty transaction's marker completes nothing.
    assert_eq!(leader(&mut m, &marker(1, 0, 2, true, 9)).unwrap(), None);
}

#[test]
fn mirror_pid_reset_forgets_every_producer_and_open_transaction() {
    let mut m = ProducerStateManager::new(None, i64::MAX);
    m.replay(&data(1, 0, 0, 0, 2, true), AppendOrigin::Mirror);
    m.replay(&data(2, 4, 10, 2, 2, false), AppendOrigin::Mirror);
    assert_eq!(m.producer_count(), 2);
    m.replay(&reset(4), AppendOrigin::Mirror);
    assert_eq!(m.producer_count(), 0);
    assert_eq!(m.first_unstable_offset(), None);
    assert_eq!(m.map_end_offset(), Offset(5));
    // A local producer reusing id 2 afterwards starts fresh: any epoch, sequence 0.
    leader(&mut m, &data(2, 0, 0, 5, 1, false)).unwrap();
    assert_eq!(
        m.entry(ProducerId(2)).unwrap().producer_epoch,
        ProducerEpoch(0)
    );
}

#[test]
fn snapshots_round_trip_and_reload_after_truncation() {
    let dir = tempfile::tempdir().unwrap();
    let mut m = ProducerStateManager::new(Some(dir.path()), i64::MAX);
    m.replay(&data(1, 0, 0, 0, 2, true), AppendOrigin::Replication);
    m.replay(&data(2, 1, 5, 2, 3, false), AppendOrigin::Replication);
    let path = m.take_snapshot().unwrap().unwrap();
    assert!(path.ends_with("00000000000000000005.snapshot"));
    m.replay(&data(2, 1, 8, 5, 1, false), AppendOrigin::Replication);
    // Truncate back to 5: reload from the snapshot; nothing to replay.
    let from = m.truncate_and_reload(Offset(0), Offset(5), 0).unwrap();
    assert_eq!(from, Offset(5));
    assert_eq!(m.entry(ProducerId(2)).unwrap().last_seq(), Sequence(7));
    assert_eq!(
        m.first_unstable_offset(),
        Some(Offset(0)),
        "open transaction restored from the snapshot"
    );
    // Truncate below the snapshot: it is deleted and the state is rebuilt from the log start.
    let from = m.truncate_and_reload(Offset(0), Offset(3), 0).unwrap();
    assert_eq!(from, Offset(0));
    assert_eq!(m.producer_count(), 0);
    assert!(m.snapshots().unwrap().is_empty());
}

#[test]
fn a_corrupt_snapshot_is_deleted_and_an_older_one_used() {
    let dir = tempfile::tempdir().unwrap();
    let mut m = ProducerStateManager::new(Some(dir.path()), i64::MAX);
    m.replay(&data(1, 0, 0, 0, 2, false), AppendOrigin::Replication);
    m.take_snapshot().unwrap();
    m.replay(&data(1, 0, 2, 2, 2, false), AppendOrigin::Replication);
    let newer = m.take_snapshot().unwrap().unwrap();
    std::fs::write(&newer, b"garbage").unwrap();
    let mut fresh = ProducerStateManager::new(Some(dir.path()), i64::MAX);
    assert_eq!(
        fresh.truncate_and_reload(Offset(0), Offset(4), 0).unwrap(),
        Offset(2)
    );
    assert!(!newer.exists());
    assert_eq!(fresh.entry(ProducerId(1)).unwrap().last_seq(), Sequence(1));
}

#[test]
fn idle_producers_expire_unless_a_transaction_is_open() {
    let mut m = ProducerStateManager::new(None, 100);
    m.replay(&data(1, 0, 0, 0, 1, false), AppendOrigin::Replication);
    m.replay(&data(2, 0, 0, 1, 1, true), AppendOrigin::Replication);
    assert_eq!(m.remove_expired_producers(1099), 0);
    assert_eq!(m.remove_expired_producers(1100), 1);
    assert!(m.entry(ProducerId(2)).is_some());
}

#[test]
fn sequence_wraps_past_int_max() {
    let mut m = ProducerStateManager::new(None, i64::MAX);
    leader(&mut m, &data(7, 0, i32::MAX - 1, 0, 2, false)).unwrap();
    leader(&mut m, &data(7, 0, 0, 2, 1, false)).unwrap();
}
