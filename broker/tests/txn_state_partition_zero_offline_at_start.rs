//! Bug: with `__transaction_state-0` in a data directory that went offline while loading, the
//! broker did not start (`TxnCoordinator::open` could neither load nor create it). Partition 0
//! holds the coordinator epoch and the producer-id blocks: without them no producer id can be
//! handed out without risking one in use, nor a marker stamped above the last incarnation's, so
//! the broker starts with the transaction coordinator unavailable as a whole — FindCoordinator
//! (TRANSACTION) COORDINATOR_NOT_AVAILABLE, the transaction APIs NOT_COORDINATOR, InitProducerId
//! without a transactional id COORDINATOR_LOAD_IN_PROGRESS (Kafka's answer while it has no
//! producer-id block; clients retry) — and writes nothing to `__transaction_state`. The rest of
//! the broker serves. Repaired, every partition loads as it was.

use kafka_protocol::ResponseError as E;
use kafka_protocol::messages::find_coordinator_request::FindCoordinatorRequest;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use mirrorlog_broker::broker::{Broker, BrokerConfig};
use mirrorlog_broker::server::{Handler, RequestContext};
use mirrorlog_broker::txn::TxnConfig;
use mirrorlog_broker::txn::state_log::partition_for;
use mirrorlog_engine::clock::ManualClock;
use mirrorlog_index::TopicPartition;
use mirrorlog_segment::io::{Fault, FaultKind, IoOp, SimStorage};
use std::path::Path;
use std::sync::Arc;

const T0: i64 = 1_700_000_000_000;

fn s(x: &str) -> StrBytes {
    StrBytes::from_string(x.to_string())
}

fn open(d1: &Path, d2: &Path, sim: &Arc<SimStorage>, clock: &Arc<ManualClock>) -> Arc<Broker> {
    let mut config = BrokerConfig::new(d1, "127.0.0.1", 9092);
    config.cluster_id = Some("c".into());
    config.logs.data_dirs = vec![d1.to_path_buf(), d2.to_path_buf()];
    config.logs.recovery_threads = 1;
    let b = Arc::new(Broker::open(config, sim.clone(), clock.clone()).unwrap());
    b.register_arc();
    mirrorlog_broker::coordinators::install(&b)
        .expect("the coordinators install with a __transaction_state partition offline");
    b
}

fn close(b: Arc<Broker>) {
    Arc::try_unwrap(b)
        .map_err(|_| "broker still shared")
        .unwrap()
        .shutdown()
        .unwrap();
}

fn call(b: &Broker, api: ApiKey, v: i16, req: RequestKind) -> ResponseKind {
    let ctx = RequestContext {
        peer: "127.0.0.1:1".parse().unwrap(),
        connection_id: 1,
        client_id: Some("test".into()),
        api_key: api,
        api_version: v,
        correlation_id: 1,
    };
    let header = RequestHeader::default()
        .with_request_api_key(api as i16)
        .with_request_api_version(v);
    b.handle(&ctx, &header, req).expect("a response")
}

/// InitProducerId v4: (error, producer id, epoch).
fn init(b: &Broker, txn_id: Option<&str>) -> (i16, i64, i16) {
    let mut r = InitProducerIdRequest::default();
    r.transactional_id = txn_id.map(|t| TransactionalId(s(t)));
    r.transaction_timeout_ms = 60_000;
    let ResponseKind::InitProducerId(resp) = call(b, ApiKey::InitProducerId, 4, r.into()) else {
        panic!("not an InitProducerId response");
    };
    (resp.error_code, resp.producer_id.0, resp.producer_epoch)
}

fn end_txn(b: &Broker, txn_id: &str, pid: i64, epoch: i16) -> i16 {
    let mut r = EndTxnRequest::default();
    r.transactional_id = TransactionalId(s(txn_id));
    r.producer_id = ProducerId(pid);
    r.producer_epoch = epoch;
    r.committed = true;
    let ResponseKind::EndTxn(resp) = call(b, ApiKey::EndTxn, 3, r.into()) else {
        panic!("not an EndTxn response");
    };
    resp.error_code
}

/// FindCoordinator(TRANSACTION): v3 for one key, v4 for several; the error of each key.
fn find(b: &Broker, keys: &[&str]) -> Vec<i16> {
    if let [key] = keys {
        let mut r = FindCoordinatorRequest::default();
        r.key = s(key);
        r.key_type = 1;
        let ResponseKind::FindCoordinator(resp) = call(b, ApiKey::FindCoordinator, 3, r.into())
        else {
            panic!("not a FindCoordinator response");
        };
        if resp.error_code == 0 {
            assert_eq!(resp.node_id.0, b.config.node_id, "this broker coordinates");
        } else {
            assert_eq!(resp.node_id.0, -1, "no coordinator");
        }
        return vec![resp.error_code];
    }
    let mut r = FindCoordinatorRequest::default();
    r.key_type = 1;
    r.coordinator_keys = keys.iter().map(|k| s(k)).collect();
    let ResponseKind::FindCoordinator(resp) = call(b, ApiKey::FindCoordinator, 4, r.into()) else {
        panic!("not a FindCoordinator response");
    };
    resp.coordinators.iter().map(|c| c.error_code).collect()
}

fn state_tp(p: i32) -> TopicPartition {
    TopicPartition {
        topic: "__transaction_state".into(),
        partition: p,
    }
}

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
    assert_eq!(find(&b, &[&on_id]), vec![E::CoordinatorNotAvailable.code()]);
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
    // The rest of the broker serves: the group coordinator, for one.
    let mut r = FindCoordinatorRequest::default();
    r.key = s("some-group");
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
