//! Bug: a `__transaction_state` partition whose data directory went offline while loading made
//! `TxnCoordinator::open` fail (it could neither load nor create the partition), so the broker
//! did not start until the disk was repaired. Kafka starts: that coordinator partition simply
//! has no leader here. FindCoordinator answers COORDINATOR_NOT_AVAILABLE for the transactional
//! ids hashing there, and the transaction APIs NOT_COORDINATOR (their state is neither read nor
//! written, never recreated empty); every other transactional id, and InitProducerId without
//! one, work; the timers leave the unloaded ids alone. Repaired, the partition loads as it was.
//! FindCoordinator(GROUP) answers the same for a group whose `__consumer_offsets` partition is in
//! that directory.

use crate::common;

use common::two_dir_broker::{
    add_partition, call, close, end_txn, find, init, open, produce_txn, s, state_tp,
};
use kafka_protocol::ResponseError as E;
use kafka_protocol::messages::*;
use mirrorlog_broker::broker::Broker;
use mirrorlog_broker::txn::TxnConfig;
use mirrorlog_broker::txn::state_log::partition_for;
use mirrorlog_engine::clock::ManualClock;
use mirrorlog_engine::config::LogConfig;
use mirrorlog_index::TopicPartition;
use mirrorlog_segment::io::{Fault, FaultKind, IoOp, SimStorage};
use std::path::Path;
use std::sync::Arc;

const T0: i64 = 1_700_000_000_000;

fn add_offsets(b: &Broker, txn_id: &str, pid: i64, epoch: i16) -> i16 {
    let mut r = AddOffsetsToTxnRequest::default();
    r.transactional_id = TransactionalId(s(txn_id));
    r.producer_id = ProducerId(pid);
    r.producer_epoch = epoch;
    r.group_id = GroupId(s("g"));
    let ResponseKind::AddOffsetsToTxn(resp) = call(b, ApiKey::AddOffsetsToTxn, 3, r.into()) else {
        panic!("not an AddOffsetsToTxn response");
    };
    resp.error_code
}

#[test]
fn a_transaction_state_partition_in_an_offline_dir_leaves_only_its_ids_unavailable() {
    let d1 = tempfile::tempdir().unwrap();
    let d2 = tempfile::tempdir().unwrap();
    let sim = Arc::new(SimStorage::new());
    let clock = ManualClock::new(T0);
    let parts = TxnConfig::default().transaction_state_partitions;

    let b = open(d1.path(), d2.path(), &sim, &clock);
    b.topics
        .create(&b.logs, "t", 2, LogConfig::default(), None)
        .unwrap();
    let dir_of = |b: &Broker, tp: &TopicPartition| b.logs.get(tp).unwrap().data_dir().to_path_buf();
    // The directory to fail is the one without partition 0 (the producer-id blocks).
    let good = dir_of(&b, &state_tp(0));
    let bad = if good == d1.path() {
        d2.path()
    } else {
        d1.path()
    }
    .to_path_buf();
    let id_in = |dir: &Path| {
        (0..1000)
            .map(|i| format!("tx-{i}"))
            .find(|id| dir_of(&b, &state_tp(partition_for(id, parts))) == dir)
            .expect("an id hashing into that dir")
    };
    let (off_id, on_id) = (id_in(&bad), id_in(&good));
    let off_tp = state_tp(partition_for(&off_id, parts));
    let t_good = (0..2)
        .map(|p| TopicPartition {
            topic: "t".into(),
            partition: p,
        })
        .find(|tp| dir_of(&b, tp) == good)
        .unwrap();
    let (err, off_pid, off_epoch) = init(&b, Some(&off_id));
    assert_eq!(err, 0);
    // A transaction left open in the partition that goes offline.
    assert_eq!(add_partition(&b, &off_id, off_pid, off_epoch, &t_good), 0);
    let (err, on_pid, on_epoch) = init(&b, Some(&on_id));
    assert_eq!(err, 0);
    close(b);

    // Listing the state partition fails at the next start: its whole dir goes offline.
    let fault_path = bad.join(off_tp.to_string());
    sim.inject(Fault::new(IoOp::ListDir, FaultKind::Eio).on_path(fault_path.to_str().unwrap()));
    let b = open(d1.path(), d2.path(), &sim, &clock);
    assert!(b.logs.offline_dirs().iter().any(|(p, _)| *p == bad));
    assert!(
        !good.join(off_tp.to_string()).exists(),
        "{off_tp} was created again, empty, in the online dir"
    );

    // The unloaded partition's ids: no coordinator.
    assert_eq!(
        find(&b, 1, &[&off_id]),
        vec![E::CoordinatorNotAvailable.code()]
    );
    assert_eq!(
        find(&b, 1, &[&off_id, &on_id]),
        vec![E::CoordinatorNotAvailable.code(), 0]
    );
    assert_eq!(init(&b, Some(&off_id)).0, E::NotCoordinator.code());
    assert_eq!(
        add_partition(&b, &off_id, off_pid, off_epoch, &t_good),
        E::NotCoordinator.code()
    );
    assert_eq!(
        add_offsets(&b, &off_id, off_pid, off_epoch),
        E::NotCoordinator.code()
    );
    assert_eq!(
        end_txn(&b, &off_id, off_pid, off_epoch),
        E::NotCoordinator.code()
    );
    // Its open transaction cannot be verified (KIP-890): Kafka's answer to the producer for a
    // coordinator that does not serve the id is the retriable NOT_ENOUGH_REPLICAS.
    assert_eq!(
        produce_txn(&b, &off_id, (off_pid, off_epoch), T0, &t_good),
        E::NotEnoughReplicas.code()
    );

    // The same for a group whose `__consumer_offsets` partition is in that directory (its
    // group APIs answer NOT_COORDINATOR; see offsets_partition_in_offline_dir_recreated.rs).
    let offline = b.logs.offline_partitions();
    let group_dir = |g: &str| {
        let tp = TopicPartition {
            topic: "__consumer_offsets".into(),
            partition: partition_for(g, 8),
        };
        match b.logs.get(&tp) {
            Some(h) => h.data_dir().to_path_buf(),
            None => offline
                .iter()
                .find(|(o, _)| *o == tp)
                .expect("offline")
                .1
                .clone(),
        }
    };
    let group_in = |dir: &Path| {
        (0..1000)
            .map(|i| format!("group-{i}"))
            .find(|g| group_dir(g) == dir)
            .expect("a group hashing into that dir")
    };
    let (off_group, on_group) = (group_in(&bad), group_in(&good));
    assert_eq!(
        find(&b, 0, &[&off_group, &on_group]),
        vec![E::CoordinatorNotAvailable.code(), 0]
    );
    assert_eq!(
        find(&b, 0, &[&off_group]),
        vec![E::CoordinatorNotAvailable.code()]
    );

    // Everything else works.
    assert_eq!(find(&b, 1, &[&on_id]), vec![0]);
    let (err, idempotent_pid, epoch) = init(&b, None);
    assert_eq!((err, epoch), (0, 0));
    assert!(idempotent_pid > on_pid.max(off_pid), "a fresh producer id");
    let (err, pid, epoch) = init(&b, Some(&on_id));
    assert_eq!((err, pid), (0, on_pid));
    assert!(epoch > on_epoch);
    assert_eq!(add_partition(&b, &on_id, pid, epoch, &t_good), 0);
    assert_eq!(end_txn(&b, &on_id, pid, epoch), 0);

    // The timers (timeouts, expiry, the state-log rewrite) run and skip the unloaded ids.
    clock.advance(8 * 24 * 3600 * 1000);
    b.tick();
    b.tick();
    close(b);

    // Repaired: the partition loads as it was — the same producer id for the same
    // transactional id, its open transaction fenced and aborted by the new incarnation.
    let b = open(d1.path(), d2.path(), &sim, &clock);
    assert!(b.logs.offline_dirs().is_empty());
    assert_eq!(find(&b, 1, &[&off_id]), vec![0]);
    let (err, pid, epoch) = init(&b, Some(&off_id));
    assert_eq!(err, 0);
    assert_eq!(
        pid, off_pid,
        "the transactional id's state was kept, not recreated"
    );
    assert!(epoch > off_epoch);
    close(b);
}
