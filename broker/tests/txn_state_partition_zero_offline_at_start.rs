//! Bug: with `__transaction_state-0` in a data directory that went offline while loading, the
//! broker did not start (`TxnCoordinator::open` could neither load nor create it). Partition 0
//! holds the coordinator epoch and the producer-id blocks: without them no producer id can be
//! handed out without risking one in use, nor a marker stamped above the last incarnation's, so
//! the broker starts with the transaction coordinator unavailable as a whole — FindCoordinator
//! (TRANSACTION) COORDINATOR_NOT_AVAILABLE, the transaction APIs NOT_COORDINATOR, InitProducerId
//! without a transactional id COORDINATOR_LOAD_IN_PROGRESS (Kafka's answer while it has no
//! producer-id block; clients retry) — and writes nothing to `__transaction_state`. The rest of
//! the broker serves. Repaired, every partition loads as it was.

use crate::common;

use common::two_dir_broker::{call, close, end_txn, find, init, open, s, state_tp};
use kafka_protocol::ResponseError as E;
use kafka_protocol::messages::find_coordinator_request::FindCoordinatorRequest;
use kafka_protocol::messages::*;
use mirrorlog_broker::broker::Broker;
use mirrorlog_broker::txn::TxnConfig;
use mirrorlog_broker::txn::state_log::partition_for;
use mirrorlog_engine::clock::ManualClock;
use mirrorlog_index::TopicPartition;
use mirrorlog_segment::io::{Fault, FaultKind, IoOp, SimStorage};
use std::sync::Arc;

const T0: i64 = 1_700_000_000_000;

#[test]
fn with_transaction_state_partition_zero_offline_the_broker_starts_without_transactions() {
    let d1 = tempfile::tempdir().unwrap();
    let d2 = tempfile::tempdir().unwrap();
    let sim = Arc::new(SimStorage::new());
    let clock = ManualClock::new(T0);
    let parts = TxnConfig::default().transaction_state_partitions;

    let b = open(d1.path(), d2.path(), &sim, &clock);
    let dir_of = |b: &Broker, tp: &TopicPartition| b.logs.get(tp).unwrap().data_dir().to_path_buf();
    let bad = dir_of(&b, &state_tp(0));
    let good = if bad == d1.path() {
        d2.path()
    } else {
        d1.path()
    }
    .to_path_buf();
    let on_id = (0..1000)
        .map(|i| format!("tx-{i}"))
        .find(|id| dir_of(&b, &state_tp(partition_for(id, parts))) == good)
        .expect("an id hashing into the other dir");
    let (err, on_pid, on_epoch) = init(&b, Some(&on_id));
    assert_eq!(err, 0);
    let (err, idempotent_pid, _) = init(&b, None);
    assert_eq!(err, 0);
    close(b);

    let fault_path = bad.join(state_tp(0).to_string());
    sim.inject(Fault::new(IoOp::ListDir, FaultKind::Eio).on_path(fault_path.to_str().unwrap()));
    let b = open(d1.path(), d2.path(), &sim, &clock);
    assert!(b.logs.offline_dirs().iter().any(|(p, _)| *p == bad));
    assert!(!good.join(state_tp(0).to_string()).exists());
    let on_tp = state_tp(partition_for(&on_id, parts));
    let end_before = b.logs.get(&on_tp).unwrap().read().log_end_offset();

    // Even an id whose own partition is online: its markers would need the coordinator epoch.
    assert_eq!(
        find(&b, 1, &[&on_id]),
        vec![E::CoordinatorNotAvailable.code()]
    );
    assert_eq!(init(&b, Some(&on_id)).0, E::NotCoordinator.code());
    assert_eq!(
        end_txn(&b, &on_id, on_pid, on_epoch),
        E::NotCoordinator.code()
    );
    assert_eq!(init(&b, None).0, E::CoordinatorLoadInProgress.code());
    clock.advance(8 * 24 * 3600 * 1000);
    b.tick();
    let end_after = b.logs.get(&on_tp).unwrap().read().log_end_offset();
    assert_eq!(end_before, end_after, "nothing written to {on_tp}");
    // The rest of the broker serves: the group coordinator, for one (a group whose offsets
    // partition is in the online directory).
    let group = (0..1000)
        .map(|i| format!("group-{i}"))
        .find(|g| {
            matches!(
                b.logs.lookup(&TopicPartition {
                    topic: "__consumer_offsets".into(),
                    partition: partition_for(g, 8),
                }),
                Ok(Some(_))
            )
        })
        .expect("a group in the online directory");
    let mut r = FindCoordinatorRequest::default();
    r.key = s(&group);
    r.key_type = 0;
    let ResponseKind::FindCoordinator(resp) = call(&b, ApiKey::FindCoordinator, 3, r.into()) else {
        panic!("not a FindCoordinator response");
    };
    assert_eq!(resp.error_code, 0);
    close(b);

    // Repaired: loads as it was; producer ids continue above those handed out before.
    let b = open(d1.path(), d2.path(), &sim, &clock);
    assert!(b.logs.offline_dirs().is_empty());
    let (err, pid, epoch) = init(&b, Some(&on_id));
    assert_eq!((err, pid), (0, on_pid));
    assert!(epoch > on_epoch);
    let (err, fresh, _) = init(&b, None);
    assert_eq!(err, 0);
    assert!(fresh > idempotent_pid);
    close(b);
}
