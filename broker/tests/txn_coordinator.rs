//! Scenario: the transaction coordinator on a real log manager in a temporary directory, driven
//! by a manual clock — idempotent and transactional InitProducerId, transactions committed and
//! aborted with their markers in every partition, fencing, timeouts, expiration, a crash
//! between PrepareCommit and the markers, and the wire-level error codes. Nothing here waits
//! on real time.

use crate::common;

use common::txn::{PartitionResults, flatten};
use kafka_protocol::ResponseError;
use kafka_protocol::messages::add_partitions_to_txn_request::{
    AddPartitionsToTxnTopic, AddPartitionsToTxnTransaction,
};
use kafka_protocol::messages::{
    AddOffsetsToTxnRequest, AddPartitionsToTxnRequest, AddPartitionsToTxnResponse, ApiKey,
    EndTxnRequest, GroupId, InitProducerIdRequest, InitProducerIdResponse, RequestKind,
    ResponseKind, TopicName, TransactionalId,
};
use kafka_protocol::protocol::StrBytes;
use mirrorlog_broker::txn::state_log::{self, OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC};
use mirrorlog_broker::txn::{TxnConfig, TxnCoordinator, TxnError, TxnOffsetsSink, TxnState};
use mirrorlog_engine::clock::{Clock, ManualClock};
use mirrorlog_engine::config::LogConfig;
use mirrorlog_engine::error::EngineError;
use mirrorlog_engine::log::{FetchIsolation, LeaderOrigin};
use mirrorlog_engine::manager::{LogManager, LogManagerConfig};
use mirrorlog_index::{
    AbortedTxn, LeaderEpoch, Offset, ProducerEpoch, ProducerId, Sequence, TimestampMs, TopicId,
    TopicPartition,
};
use mirrorlog_segment::io::{PwriteStorage, Storage};
use mirrorlog_segment::{BatchBuilder, Batches, ControlRecordType, RecordBatch};
use parking_lot::Mutex;
use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;

const T0: i64 = 1_700_000_000_000;
const NONE: i16 = 0;
const OFFSETS_PARTITION: i32 = 3;

/// The group coordinator's side, recorded.
#[derive(Debug, Default)]
struct FakeSink {
    completed: Mutex<Vec<(i64, i16, bool)>>,
}

impl TxnOffsetsSink for FakeSink {
    fn partition_for(&self, _group_id: &str) -> i32 {
        OFFSETS_PARTITION
    }
    fn complete_txn(
        &self,
        producer_id: i64,
        producer_epoch: i16,
        commit: bool,
        _partitions: &[i32],
    ) {
        self.completed
            .lock()
            .push((producer_id, producer_epoch, commit));
    }
}

struct Broker {
    clock: Arc<ManualClock>,
    logs: Arc<LogManager>,
    txn: Arc<TxnCoordinator>,
    sink: Arc<FakeSink>,
}

fn tp(topic: &str, partition: i32) -> TopicPartition {
    TopicPartition {
        topic: topic.into(),
        partition,
    }
}

fn open_logs(dir: &Path, clock: &Arc<ManualClock>) -> Arc<LogManager> {
    let storage: Arc<dyn Storage> = Arc::new(PwriteStorage::new());
    let clock: Arc<dyn Clock> = clock.clone();
    Arc::new(
        LogManager::open(LogManagerConfig::new(dir), storage, clock)
            .unwrap()
            .0,
    )
}

fn open_txn(logs: &Arc<LogManager>, clock: &Arc<ManualClock>, config: TxnConfig) -> Broker {
    let sink = Arc::new(FakeSink::default());
    let txn = TxnCoordinator::open(logs.clone(), sink.clone(), clock.clone(), config).unwrap();
    Broker {
        clock: clock.clone(),
        logs: logs.clone(),
        txn,
        sink,
    }
}

/// A broker with topic `orders` (2 partitions) and `__consumer_offsets-3`.
fn start(dir: &Path, config: TxnConfig) -> Broker {
    let clock = ManualClock::new(T0);
    let logs = open_logs(dir, &clock);
    for p in 0..2 {
        logs.create(&tp("orders", p), TopicId([7; 16]), LogConfig::default())
            .unwrap();
    }
    logs.create(
        &tp(OFFSETS_TOPIC, OFFSETS_PARTITION),
        TopicId([9; 16]),
        LogConfig::default(),
    )
    .unwrap();
    open_txn(&logs, &clock, config)
}

/// Simulates a crash: the coordinator and log manager are dropped without a clean shutdown,
/// then both are opened again on the same directory.
fn crash_and_reopen(b: Broker, dir: &Path, config: TxnConfig) -> Broker {
    let clock = b.clock.clone();
    drop(b);
    let logs = open_logs(dir, &clock);
    open_txn(&logs, &clock, config)
}

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

fn init(b: &Broker, version: i16, id: Option<&str>, timeout_ms: i32) -> InitProducerIdResponse {
    init_expecting(b, version, id, timeout_ms, (-1, -1))
}

fn init_expecting(
    b: &Broker,
    version: i16,
    id: Option<&str>,
    timeout_ms: i32,
    expected: (i64, i16),
) -> InitProducerIdResponse {
    let mut r = InitProducerIdRequest::default();
    r.transactional_id = id.map(|i| TransactionalId(s(i)));
    r.transaction_timeout_ms = timeout_ms;
    r.producer_id = expected.0.into();
    r.producer_epoch = expected.1;
    match b.txn.handle(version, RequestKind::InitProducerId(r)) {
        ResponseKind::InitProducerId(x) => x,
        other => panic!("unexpected response {other:?}"),
    }
}

/// A transactional producer at epoch 0 with a 60 s timeout: (producer id, epoch).
fn init_txn(b: &Broker, id: &str) -> (i64, i16) {
    let r = init(b, 5, Some(id), 60_000);
    assert_eq!(r.error_code, NONE);
    (r.producer_id.0, r.producer_epoch)
}

fn add_partitions(
    b: &Broker,
    version: i16,
    id: &str,
    producer: (i64, i16),
    partitions: &[(&str, i32)],
) -> PartitionResults {
    let mut r = AddPartitionsToTxnRequest::default();
    r.v3_and_below_transactional_id = TransactionalId(s(id));
    r.v3_and_below_producer_id = producer.0.into();
    r.v3_and_below_producer_epoch = producer.1;
    r.v3_and_below_topics = topics(partitions);
    flatten(&add_partitions_response(b, version, r).results_by_topic_v3_and_below)
}

fn topics(partitions: &[(&str, i32)]) -> Vec<AddPartitionsToTxnTopic> {
    let mut out: Vec<AddPartitionsToTxnTopic> = vec![];
    for (topic, p) in partitions {
        match out.iter_mut().find(|t| t.name.0.as_str() == *topic) {
            Some(t) => t.partitions.push(*p),
            None => {
                let mut t = AddPartitionsToTxnTopic::default();
                t.name = TopicName(s(topic));
                t.partitions = vec![*p];
                out.push(t);
            }
        }
    }
    out
}

fn add_partitions_response(
    b: &Broker,
    version: i16,
    r: AddPartitionsToTxnRequest,
) -> AddPartitionsToTxnResponse {
    match b.txn.handle(version, RequestKind::AddPartitionsToTxn(r)) {
        ResponseKind::AddPartitionsToTxn(x) => x,
        other => panic!("unexpected response {other:?}"),
    }
}

fn add_offsets(b: &Broker, version: i16, id: &str, producer: (i64, i16), group: &str) -> i16 {
    let mut r = AddOffsetsToTxnRequest::default();
    r.transactional_id = TransactionalId(s(id));
    r.producer_id = producer.0.into();
    r.producer_epoch = producer.1;
    r.group_id = GroupId(s(group));
    match b.txn.handle(version, RequestKind::AddOffsetsToTxn(r)) {
        ResponseKind::AddOffsetsToTxn(x) => x.error_code,
        other => panic!("unexpected response {other:?}"),
    }
}

fn end_txn(b: &Broker, version: i16, id: &str, producer: (i64, i16), commit: bool) -> i16 {
    let mut r = EndTxnRequest::default();
    r.transactional_id = TransactionalId(s(id));
    r.producer_id = producer.0.into();
    r.producer_epoch = producer.1;
    r.committed = commit;
    match b.txn.handle(version, RequestKind::EndTxn(r)) {
        ResponseKind::EndTxn(x) => x.error_code,
        other => panic!("unexpected response {other:?}"),
    }
}

/// Produces `n` transactional records through the engine's client path, as the produce
/// handler would, and moves the high watermark to the log end.
fn produce(
    b: &Broker,
    partition: &TopicPartition,
    producer: (i64, i16),
    base_sequence: i32,
    n: usize,
) -> Result<Offset, EngineError> {
    let mut batch = BatchBuilder::new()
        .producer(
            ProducerId(producer.0),
            ProducerEpoch(producer.1),
            Sequence(base_sequence),
        )
        .transactional(true);
    for i in 0..n {
        let v = format!("value-{i}");
        batch.append(
            TimestampMs(b.clock.now_ms()),
            Some(b"key"),
            Some(v.as_bytes()),
            &[],
        );
    }
    let h = b.logs.get(partition).unwrap();
    let info = h.append_as_leader_durable(
        batch.build().into_bytes(),
        LeaderEpoch(0),
        LeaderOrigin::Client,
    )?;
    let mut log = h.write();
    let leo = log.log_end_offset();
    log.update_high_watermark(leo);
    Ok(info.first_offset)
}

fn batches(b: &Broker, partition: &TopicPartition) -> Vec<RecordBatch> {
    let h = b.logs.get(partition).unwrap();
    let log = h.read();
    let info = log
        .read(
            log.log_start_offset(),
            64 << 20,
            FetchIsolation::LogEnd,
            true,
        )
        .unwrap();
    match info.records {
        None => vec![],
        Some(d) => Batches::new(d.slice.read_all().unwrap())
            .map(|b| b.unwrap())
            .collect(),
    }
}

/// The end-transaction markers of a partition: (type, producer id, epoch, coordinator epoch).
fn markers(b: &Broker, partition: &TopicPartition) -> Vec<(ControlRecordType, i64, i16, i32)> {
    batches(b, partition)
        .iter()
        .filter(|b| b.is_control())
        .map(|batch| {
            assert!(
                batch.is_transactional(),
                "markers are transactional batches"
            );
            let c = batch.control_record().unwrap().unwrap();
            (
                c.kind,
                batch.producer_id().get(),
                batch.producer_epoch().get(),
                c.end_txn.unwrap().coordinator_epoch,
            )
        })
        .collect()
}

fn lso_and_leo(b: &Broker, partition: &TopicPartition) -> (Offset, Offset) {
    let h = b.logs.get(partition).unwrap();
    let log = h.read();
    (log.last_stable_offset(), log.log_end_offset())
}

fn committed_records(b: &Broker, partition: &TopicPartition) -> usize {
    let h = b.logs.get(partition).unwrap();
    let log = h.read();
    let info = log
        .read(Offset(0), 64 << 20, FetchIsolation::TxnCommitted, true)
        .unwrap();
    match info.records {
        None => 0,
        Some(d) => Batches::new(d.slice.read_all().unwrap())
            .map(|b| b.unwrap())
            .filter(|b| !b.is_control())
            .map(|b| b.records_count() as usize)
            .sum(),
    }
}

fn aborted(b: &Broker, partition: &TopicPartition) -> Vec<AbortedTxn> {
    let h = b.logs.get(partition).unwrap();
    let log = h.read();
    log.collect_aborted_txns(Offset(0), log.log_end_offset())
        .unwrap()
}

/// Writes a transactional id's state straight into `__transaction_state`, as a coordinator
/// that crashed right after writing it would have left it.
fn write_state_record(b: &Broker, id: &str, m: &mirrorlog_broker::txn::TxnMetadata) {
    let h = b
        .logs
        .get(&tp(TRANSACTION_STATE_TOPIC, b.txn.partition_for(id)))
        .unwrap();
    h.append_as_leader_durable(
        state_log::txn_record_batch(id, Some(m), b.clock.now_ms()),
        LeaderEpoch(0),
        LeaderOrigin::Client,
    )
    .unwrap();
    let mut log = h.write();
    let leo = log.log_end_offset();
    log.update_high_watermark(leo);
}

fn code(e: ResponseError) -> i16 {
    e.code()
}

#[test]
fn idempotent_producer_ids_are_distinct_and_survive_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let config = TxnConfig {
        producer_id_block_size: 3,
        ..TxnConfig::default()
    };
    let b = start(dir.path(), config.clone());
    assert_eq!(b.txn.coordinator_epoch(), 0);
    let mut ids = BTreeSet::new();
    for version in [0, 2, 4, 5] {
        for _ in 0..2 {
            let r = init(&b, version, None, 0);
            assert_eq!(r.error_code, NONE);
            assert_eq!(
                r.producer_epoch, 0,
                "an idempotent producer starts at epoch 0"
            );
            assert!(ids.insert(r.producer_id.0), "distinct ids");
        }
    }
    ids.insert(b.txn.allocate_producer_id().unwrap());
    assert_eq!(ids.len(), 9);
    let before = *ids.iter().max().unwrap();

    let b = crash_and_reopen(b, dir.path(), config.clone());
    assert_eq!(
        b.txn.coordinator_epoch(),
        1,
        "each incarnation takes the next epoch"
    );
    for _ in 0..4 {
        let id = init(&b, 5, None, 0).producer_id.0;
        assert!(id > before, "{id} was not handed out before {before}");
        assert!(ids.insert(id));
    }
    // The broker's own use (the mirror) draws from the same sequence.
    let id = b.txn.allocate_producer_id().unwrap();
    assert!(ids.insert(id));

    // A clean shutdown keeps the guarantee too.
    let clock = b.clock.clone();
    drop(b.txn);
    let logs = Arc::try_unwrap(b.logs).expect("the coordinator released the log manager");
    logs.shutdown().unwrap();
    let b = open_txn(&open_logs(dir.path(), &clock), &clock, config);
    assert_eq!(b.txn.coordinator_epoch(), 2);
    let id = b.txn.allocate_producer_id().unwrap();
    assert!(id > *ids.iter().max().unwrap());
}

#[test]
fn commit_writes_markers_in_every_partition_and_moves_the_lso() {
    let dir = tempfile::tempdir().unwrap();
    let b = start(dir.path(), TxnConfig::default());
    let (p0, p1) = (tp("orders", 0), tp("orders", 1));
    let producer = init_txn(&b, "tx");
    assert_eq!(producer.1, 0);
    assert_eq!(
        add_partitions(&b, 3, "tx", producer, &[("orders", 0), ("orders", 1)]),
        vec![("orders".into(), 0, NONE), ("orders".into(), 1, NONE)]
    );
    assert_eq!(b.txn.transaction("tx").unwrap().state, TxnState::Ongoing);
    produce(&b, &p0, producer, 0, 3).unwrap();
    produce(&b, &p1, producer, 0, 2).unwrap();
    produce(&b, &p0, producer, 3, 1).unwrap();
    // Open transaction: nothing is stable, nothing is visible to READ_COMMITTED.
    assert_eq!(lso_and_leo(&b, &p0), (Offset(0), Offset(4)));
    assert_eq!(committed_records(&b, &p0), 0);

    assert_eq!(end_txn(&b, 3, "tx", producer, true), NONE);

    for (partition, records) in [(&p0, 4), (&p1, 2)] {
        assert_eq!(
            markers(&b, partition),
            vec![(ControlRecordType::Commit, producer.0, producer.1, 0)]
        );
        let (lso, leo) = lso_and_leo(&b, partition);
        assert_eq!(lso, leo, "the LSO passes the marker");
        assert_eq!(leo, Offset(records as i64 + 1));
        assert_eq!(committed_records(&b, partition), records);
        assert!(aborted(&b, partition).is_empty());
    }
    let m = b.txn.transaction("tx").unwrap();
    assert_eq!(m.state, TxnState::CompleteCommit);
    assert!(m.partitions.is_empty());
    assert!(b.sink.completed.lock().is_empty(), "no offsets were added");

    // A retried commit succeeds; an abort of the committed transaction does not fit.
    assert_eq!(end_txn(&b, 3, "tx", producer, true), NONE);
    assert_eq!(
        end_txn(&b, 3, "tx", producer, false),
        code(ResponseError::InvalidTxnState)
    );
    // The next transaction of the same producer works the same way.
    assert_eq!(
        add_partitions(&b, 3, "tx", producer, &[("orders", 1)]),
        vec![("orders".into(), 1, NONE)]
    );
    produce(&b, &p1, producer, 2, 1).unwrap();
    assert_eq!(end_txn(&b, 3, "tx", producer, true), NONE);
    assert_eq!(markers(&b, &p1).len(), 2);
    assert_eq!(
        markers(&b, &p0).len(),
        1,
        "p0 was not in the second transaction"
    );
}

#[test]
fn abort_writes_abort_markers_and_the_engine_lists_the_aborted_transaction() {
    let dir = tempfile::tempdir().unwrap();
    let b = start(dir.path(), TxnConfig::default());
    let p0 = tp("orders", 0);
    let producer = init_txn(&b, "tx");
    add_partitions(&b, 3, "tx", producer, &[("orders", 0)]);
    let first = produce(&b, &p0, producer, 0, 5).unwrap();
    assert_eq!(end_txn(&b, 3, "tx", producer, false), NONE);

    assert_eq!(
        markers(&b, &p0),
        vec![(ControlRecordType::Abort, producer.0, producer.1, 0)]
    );
    let (lso, leo) = lso_and_leo(&b, &p0);
    assert_eq!((lso, leo), (Offset(6), Offset(6)));
    assert_eq!(
        aborted(&b, &p0)
            .iter()
            .map(|a| (a.producer_id, a.first_offset, a.last_offset))
            .collect::<Vec<_>>(),
        vec![(ProducerId(producer.0), first, Offset(5))]
    );
    assert_eq!(
        b.txn.transaction("tx").unwrap().state,
        TxnState::CompleteAbort
    );
}

#[test]
fn a_new_incarnation_fences_the_old_one_and_aborts_its_open_transaction() {
    let dir = tempfile::tempdir().unwrap();
    let b = start(dir.path(), TxnConfig::default());
    let p0 = tp("orders", 0);
    let old = init_txn(&b, "tx");
    add_partitions(&b, 3, "tx", old, &[("orders", 0)]);
    produce(&b, &p0, old, 0, 2).unwrap();

    // The second incarnation: the open transaction is aborted with epoch 1 (which fences the
    // old producer's writes), and the new producer gets epoch 2.
    let new = init_txn(&b, "tx");
    assert_eq!(new, (old.0, 2));
    assert_eq!(
        markers(&b, &p0),
        vec![(ControlRecordType::Abort, old.0, 1, 0)]
    );
    assert_eq!(aborted(&b, &p0).len(), 1);
    let (lso, leo) = lso_and_leo(&b, &p0);
    assert_eq!(lso, leo);

    // The old producer is fenced everywhere.
    assert_eq!(
        end_txn(&b, 3, "tx", old, true),
        code(ResponseError::ProducerFenced)
    );
    assert_eq!(
        end_txn(&b, 1, "tx", old, true),
        code(ResponseError::InvalidProducerEpoch),
        "clients older than KIP-588 get INVALID_PRODUCER_EPOCH"
    );
    assert_eq!(
        add_partitions(&b, 3, "tx", old, &[("orders", 1)]),
        vec![("orders".into(), 1, code(ResponseError::ProducerFenced))]
    );
    assert_eq!(
        add_partitions(&b, 1, "tx", old, &[("orders", 1)]),
        vec![(
            "orders".into(),
            1,
            code(ResponseError::InvalidProducerEpoch)
        )]
    );
    assert_eq!(
        add_offsets(&b, 3, "tx", old, "g"),
        code(ResponseError::ProducerFenced)
    );
    assert!(matches!(
        produce(&b, &p0, old, 2, 1),
        Err(EngineError::ProducerState(_))
    ));

    // The new producer runs its own transaction.
    add_partitions(&b, 3, "tx", new, &[("orders", 0)]);
    produce(&b, &p0, new, 0, 1).unwrap();
    assert_eq!(end_txn(&b, 3, "tx", new, true), NONE);
    assert_eq!(
        markers(&b, &p0).last(),
        Some(&(ControlRecordType::Commit, new.0, 2, 0))
    );
    let (lso, leo) = lso_and_leo(&b, &p0);
    assert_eq!(lso, leo);
}

#[test]
fn kip_360_expected_epoch_bumps_retries_and_fences() {
    let dir = tempfile::tempdir().unwrap();
    let b = start(dir.path(), TxnConfig::default());
    let (pid, epoch) = init_txn(&b, "tx");
    let bumped = init_expecting(&b, 5, Some("tx"), 60_000, (pid, epoch));
    assert_eq!(
        (
            bumped.error_code,
            bumped.producer_id.0,
            bumped.producer_epoch
        ),
        (NONE, pid, 1)
    );
    let retry = init_expecting(&b, 5, Some("tx"), 60_000, (pid, epoch));
    assert_eq!(
        (retry.error_code, retry.producer_epoch),
        (NONE, 1),
        "a retry of the bump gets the same epoch"
    );
    let stale = init_expecting(&b, 5, Some("tx"), 60_000, (pid, 7));
    assert_eq!(stale.error_code, code(ResponseError::ProducerFenced));
    assert_eq!((stale.producer_id.0, stale.producer_epoch), (-1, -1));
    let stale_v3 = init_expecting(&b, 3, Some("tx"), 60_000, (pid, 7));
    assert_eq!(
        stale_v3.error_code,
        code(ResponseError::InvalidProducerEpoch)
    );
    let half = init_expecting(&b, 5, Some("tx"), 60_000, (pid, -1));
    assert_eq!(half.error_code, code(ResponseError::InvalidRequest));
}

#[test]
fn a_transaction_past_its_timeout_is_aborted_by_tick() {
    let dir = tempfile::tempdir().unwrap();
    let config = TxnConfig {
        abort_timed_out_transaction_cleanup_interval_ms: 1_000,
        ..TxnConfig::default()
    };
    let b = start(dir.path(), config);
    let p0 = tp("orders", 0);
    let r = init(&b, 5, Some("tx"), 5_000);
    let producer = (r.producer_id.0, r.producer_epoch);
    add_partitions(&b, 3, "tx", producer, &[("orders", 0)]);
    produce(&b, &p0, producer, 0, 3).unwrap();

    b.txn.tick();
    b.clock.advance(5_000);
    b.txn.tick();
    assert_eq!(
        b.txn.transaction("tx").unwrap().state,
        TxnState::Ongoing,
        "exactly at the timeout the transaction is still open"
    );
    b.clock.advance(1_000);
    b.txn.tick();
    let m = b.txn.transaction("tx").unwrap();
    assert_eq!(m.state, TxnState::CompleteAbort);
    assert_eq!(
        m.producer_epoch,
        ProducerEpoch(1),
        "the abort fenced the producer"
    );
    assert_eq!(
        markers(&b, &p0),
        vec![(ControlRecordType::Abort, producer.0, 1, 0)]
    );
    assert_eq!(aborted(&b, &p0).len(), 1);
    let (lso, leo) = lso_and_leo(&b, &p0);
    assert_eq!(lso, leo);

    // The timed-out producer learns it was fenced; a new incarnation continues at epoch 2.
    assert_eq!(
        end_txn(&b, 3, "tx", producer, true),
        code(ResponseError::ProducerFenced)
    );
    assert_eq!(init_txn(&b, "tx"), (producer.0, 2));
}

#[test]
fn a_crash_between_prepare_commit_and_the_markers_is_completed_on_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let b = start(dir.path(), TxnConfig::default());
    let (p0, p1) = (tp("orders", 0), tp("orders", 1));
    let producer = init_txn(&b, "tx");
    add_partitions(&b, 3, "tx", producer, &[("orders", 0), ("orders", 1)]);
    produce(&b, &p0, producer, 0, 2).unwrap();
    produce(&b, &p1, producer, 0, 3).unwrap();
    // The coordinator wrote PrepareCommit, then the broker died before any marker.
    let mut m = b.txn.transaction("tx").unwrap();
    m = m.prepare_abort_or_commit(true, b.clock.now_ms());
    write_state_record(&b, "tx", &m);
    assert!(markers(&b, &p0).is_empty());

    let b = crash_and_reopen(b, dir.path(), TxnConfig::default());
    assert_eq!(b.txn.coordinator_epoch(), 1);
    assert_eq!(
        b.txn.transaction("tx").unwrap().state,
        TxnState::CompleteCommit
    );
    for (partition, records) in [(&p0, 2), (&p1, 3)] {
        assert_eq!(
            markers(&b, partition),
            vec![(ControlRecordType::Commit, producer.0, producer.1, 1)]
        );
        let (lso, leo) = lso_and_leo(&b, partition);
        assert_eq!(lso, leo);
        assert_eq!(committed_records(&b, partition), records);
    }
    // The producer's retried EndTxn gets its answer.
    assert_eq!(end_txn(&b, 3, "tx", producer, true), NONE);
    // And the completion itself survives another restart.
    let b = crash_and_reopen(b, dir.path(), TxnConfig::default());
    assert_eq!(
        b.txn.transaction("tx").unwrap().state,
        TxnState::CompleteCommit
    );
    assert_eq!(markers(&b, &p0).len(), 1, "nothing left to complete");
}

#[test]
fn markers_written_again_after_a_crash_are_harmless() {
    let dir = tempfile::tempdir().unwrap();
    let b = start(dir.path(), TxnConfig::default());
    let (p0, p1) = (tp("orders", 0), tp("orders", 1));
    let producer = init_txn(&b, "tx");
    add_partitions(&b, 3, "tx", producer, &[("orders", 0), ("orders", 1)]);
    produce(&b, &p0, producer, 0, 2).unwrap();
    produce(&b, &p1, producer, 0, 2).unwrap();
    // PrepareAbort written, and the marker reached p0 only.
    let m = b
        .txn
        .transaction("tx")
        .unwrap()
        .prepare_abort_or_commit(false, b.clock.now_ms());
    write_state_record(&b, "tx", &m);
    let h = b.logs.get(&p0).unwrap();
    h.append_as_leader_durable(
        BatchBuilder::end_txn_marker(
            ProducerId(producer.0),
            ProducerEpoch(producer.1),
            false,
            0,
            TimestampMs(b.clock.now_ms()),
        )
        .build()
        .into_bytes(),
        LeaderEpoch(0),
        LeaderOrigin::Coordinator,
    )
    .unwrap();

    let b = crash_and_reopen(b, dir.path(), TxnConfig::default());
    assert_eq!(
        b.txn.transaction("tx").unwrap().state,
        TxnState::CompleteAbort
    );
    assert_eq!(
        markers(&b, &p0),
        vec![
            (ControlRecordType::Abort, producer.0, producer.1, 0),
            (ControlRecordType::Abort, producer.0, producer.1, 1)
        ]
    );
    assert_eq!(markers(&b, &p1).len(), 1);
    for partition in [&p0, &p1] {
        let (lso, leo) = lso_and_leo(&b, partition);
        assert_eq!(lso, leo);
        assert_eq!(
            aborted(&b, partition).len(),
            1,
            "one aborted transaction, not two"
        );
    }
}

#[test]
fn offsets_in_a_transaction_get_a_marker_and_reach_the_group_coordinator() {
    let dir = tempfile::tempdir().unwrap();
    let b = start(dir.path(), TxnConfig::default());
    let offsets = tp(OFFSETS_TOPIC, OFFSETS_PARTITION);
    let producer = init_txn(&b, "tx");
    add_partitions(&b, 3, "tx", producer, &[("orders", 0)]);
    produce(&b, &tp("orders", 0), producer, 0, 1).unwrap();
    assert_eq!(add_offsets(&b, 3, "tx", producer, "group-a"), NONE);
    assert!(
        b.txn
            .transaction("tx")
            .unwrap()
            .partitions
            .contains(&offsets)
    );
    assert_eq!(end_txn(&b, 3, "tx", producer, true), NONE);
    assert_eq!(*b.sink.completed.lock(), vec![(producer.0, 0, true)]);
    assert_eq!(
        markers(&b, &offsets),
        vec![(ControlRecordType::Commit, producer.0, 0, 0)]
    );

    // An aborted transaction drops them.
    assert_eq!(add_offsets(&b, 3, "tx", producer, "group-a"), NONE);
    assert_eq!(end_txn(&b, 3, "tx", producer, false), NONE);
    assert_eq!(
        b.sink.completed.lock().last(),
        Some(&(producer.0, 0, false))
    );
    // A transaction without offsets does not call the group coordinator.
    add_partitions(&b, 3, "tx", producer, &[("orders", 1)]);
    assert_eq!(end_txn(&b, 3, "tx", producer, true), NONE);
    assert_eq!(b.sink.completed.lock().len(), 2);
}

#[test]
fn requests_that_do_not_fit_get_kafka_errors() {
    let dir = tempfile::tempdir().unwrap();
    let b = start(dir.path(), TxnConfig::default());
    // InitProducerId.
    assert_eq!(
        init(&b, 5, Some(""), 60_000).error_code,
        code(ResponseError::InvalidRequest)
    );
    assert_eq!(
        init(&b, 5, Some("tx"), 900_001).error_code,
        code(ResponseError::InvalidTransactionTimeout)
    );
    assert_eq!(
        init(&b, 5, Some("tx"), 0).error_code,
        code(ResponseError::InvalidTransactionTimeout)
    );
    // Unknown transactional id, or another producer id.
    assert_eq!(
        add_partitions(&b, 3, "nobody", (1, 0), &[("orders", 0)]),
        vec![(
            "orders".into(),
            0,
            code(ResponseError::InvalidProducerIdMapping)
        )]
    );
    assert_eq!(
        end_txn(&b, 3, "nobody", (1, 0), true),
        code(ResponseError::InvalidProducerIdMapping)
    );
    let producer = init_txn(&b, "tx");
    assert_eq!(
        end_txn(&b, 3, "tx", (producer.0 + 1, 0), true),
        code(ResponseError::InvalidProducerIdMapping)
    );
    // Nothing to end.
    assert_eq!(
        end_txn(&b, 3, "tx", producer, true),
        code(ResponseError::InvalidTxnState)
    );
    // A partition the broker does not have: nothing is added.
    assert_eq!(
        add_partitions(
            &b,
            3,
            "tx",
            producer,
            &[("orders", 0), ("nope", 0), ("orders", 7)]
        ),
        vec![
            (
                "orders".into(),
                0,
                code(ResponseError::OperationNotAttempted)
            ),
            (
                "orders".into(),
                7,
                code(ResponseError::UnknownTopicOrPartition)
            ),
            (
                "nope".into(),
                0,
                code(ResponseError::UnknownTopicOrPartition)
            ),
        ]
    );
    assert_eq!(b.txn.transaction("tx").unwrap().state, TxnState::Empty);
    // A mirror partition is read-only: no transaction may write it.
    b.logs
        .get(&tp("orders", 1))
        .unwrap()
        .write()
        .set_read_only(true);
    assert_eq!(
        add_partitions(&b, 3, "tx", producer, &[("orders", 1)]),
        vec![(
            "orders".into(),
            1,
            mirrorlog_broker::errors::READ_ONLY_TOPIC
        )]
    );
    // The typed API says the same.
    assert_eq!(
        b.txn
            .end_txn("tx", ProducerId(producer.0), ProducerEpoch(5), true),
        Err(TxnError::ProducerFenced)
    );
}

#[test]
fn versions_are_advertised_honestly() {
    assert_eq!(
        TxnCoordinator::supported_versions(ApiKey::InitProducerId),
        Some((0, 5))
    );
    assert_eq!(
        TxnCoordinator::supported_versions(ApiKey::AddPartitionsToTxn),
        Some((0, 5))
    );
    assert_eq!(
        TxnCoordinator::supported_versions(ApiKey::AddOffsetsToTxn),
        Some((0, 4))
    );
    assert_eq!(
        TxnCoordinator::supported_versions(ApiKey::EndTxn),
        Some((0, 4))
    );
    assert_eq!(TxnCoordinator::supported_versions(ApiKey::Produce), None);
    let dir = tempfile::tempdir().unwrap();
    let b = start(dir.path(), TxnConfig::default());
    let producer = init_txn(&b, "tx");
    add_partitions(&b, 3, "tx", producer, &[("orders", 0)]);
    assert_eq!(
        end_txn(&b, 5, "tx", producer, true),
        code(ResponseError::UnsupportedVersion),
        "transactions v2 (EndTxn v5) are not implemented"
    );
    assert_eq!(b.txn.transaction("tx").unwrap().state, TxnState::Ongoing);
}

#[test]
fn add_partitions_v4_verifies_or_adds_per_transaction() {
    let dir = tempfile::tempdir().unwrap();
    let b = start(dir.path(), TxnConfig::default());
    let a = init_txn(&b, "a");
    let c = init_txn(&b, "c");
    add_partitions(&b, 3, "a", a, &[("orders", 0)]);
    let txn = |id: &str, producer: (i64, i16), verify_only: bool, parts: &[(&str, i32)]| {
        let mut t = AddPartitionsToTxnTransaction::default();
        t.transactional_id = TransactionalId(s(id));
        t.producer_id = producer.0.into();
        t.producer_epoch = producer.1;
        t.verify_only = verify_only;
        t.topics = topics(parts);
        t
    };
    for (version, not_in_txn) in [
        (4, code(ResponseError::InvalidTxnState)),
        (5, code(ResponseError::TransactionAbortable)),
    ] {
        let mut r = AddPartitionsToTxnRequest::default();
        r.transactions = vec![
            txn("a", a, true, &[("orders", 0), ("orders", 1)]),
            txn("c", c, false, &[("orders", 1)]),
            txn("a", (a.0, 9), true, &[("orders", 0)]),
        ];
        let resp = add_partitions_response(&b, version, r);
        assert_eq!(resp.error_code, NONE);
        let results: Vec<(String, PartitionResults)> = resp
            .results_by_transaction
            .iter()
            .map(|t| (t.transactional_id.0.to_string(), flatten(&t.topic_results)))
            .collect();
        assert_eq!(
            results,
            vec![
                (
                    "a".into(),
                    vec![("orders".into(), 0, NONE), ("orders".into(), 1, not_in_txn)]
                ),
                ("c".into(), vec![("orders".into(), 1, NONE)]),
                (
                    "a".into(),
                    vec![("orders".into(), 0, code(ResponseError::ProducerFenced))]
                ),
            ]
        );
    }
    assert!(
        b.txn
            .transaction("c")
            .unwrap()
            .partitions
            .contains(&tp("orders", 1))
    );
}

#[test]
fn idle_transactional_ids_expire_and_start_over() {
    let dir = tempfile::tempdir().unwrap();
    let config = TxnConfig {
        transactional_id_expiration_ms: 10_000,
        remove_expired_transaction_cleanup_interval_ms: 1_000,
        ..TxnConfig::default()
    };
    let b = start(dir.path(), config.clone());
    let producer = init_txn(&b, "idle");
    let busy = init_txn(&b, "busy");
    add_partitions(&b, 3, "idle", producer, &[("orders", 0)]);
    assert_eq!(end_txn(&b, 3, "idle", producer, true), NONE);
    add_partitions(&b, 3, "busy", busy, &[("orders", 1)]);
    b.txn.tick();
    b.clock.advance(10_000);
    b.txn.tick();
    assert!(
        b.txn.transaction("idle").is_none(),
        "idle for the expiration: gone"
    );
    assert!(
        b.txn.transaction("busy").is_some(),
        "an open transaction never expires (it times out instead)"
    );
    assert_eq!(
        end_txn(&b, 3, "idle", producer, true),
        code(ResponseError::InvalidProducerIdMapping)
    );
    // The tombstone is durable.
    let b = crash_and_reopen(b, dir.path(), config);
    assert!(b.txn.transaction("idle").is_none());
    assert!(b.txn.transaction("busy").is_some());
    let again = init_txn(&b, "idle");
    assert_ne!(again.0, producer.0, "a new producer id");
    assert_eq!(again.1, 0);
}

#[test]
fn an_exhausted_epoch_rotates_the_producer_id() {
    let dir = tempfile::tempdir().unwrap();
    let b = start(dir.path(), TxnConfig::default());
    let (pid, _) = init_txn(&b, "tx");
    let mut m = b.txn.transaction("tx").unwrap();
    m.producer_epoch = ProducerEpoch(i16::MAX - 2);
    write_state_record(&b, "tx", &m);
    let b = crash_and_reopen(b, dir.path(), TxnConfig::default());
    // One more bump is possible...
    assert_eq!(init_txn(&b, "tx"), (pid, i16::MAX - 1));
    // ...then the producer id changes.
    let (rotated, epoch) = init_txn(&b, "tx");
    assert_ne!(rotated, pid);
    assert_eq!(epoch, 0);
    assert_eq!(
        b.txn.transaction("tx").unwrap().last_producer_id,
        ProducerId(pid)
    );
}

#[test]
fn the_state_log_is_rewritten_once_it_outgrows_its_live_records() {
    let dir = tempfile::tempdir().unwrap();
    let config = TxnConfig {
        transaction_state_partitions: 1,
        state_log_rewrite_min_records: 20,
        ..TxnConfig::default()
    };
    let b = start(dir.path(), config.clone());
    let state0 = tp(TRANSACTION_STATE_TOPIC, 0);
    let a = init_txn(&b, "a");
    let c = init_txn(&b, "c");
    for _ in 0..8 {
        add_partitions(&b, 3, "a", a, &[("orders", 0)]);
        assert_eq!(end_txn(&b, 3, "a", a, true), NONE);
    }
    add_partitions(&b, 3, "c", c, &[("orders", 1)]);
    let (start_before, end_before) = {
        let h = b.logs.get(&state0).unwrap();
        let log = h.read();
        (log.log_start_offset(), log.log_end_offset())
    };
    assert_eq!(start_before, Offset(0));
    assert!(end_before.get() > 20);
    b.txn.tick();
    let (start_after, end_after) = {
        let h = b.logs.get(&state0).unwrap();
        let log = h.read();
        (log.log_start_offset(), log.log_end_offset())
    };
    assert_eq!(
        start_after, end_before,
        "the old records are below the log start"
    );
    assert_eq!(
        end_after.get() - start_after.get(),
        3,
        "broker record + a + c"
    );
    let want_a = b.txn.transaction("a").unwrap();
    let want_c = b.txn.transaction("c").unwrap();

    let b = crash_and_reopen(b, dir.path(), config);
    assert_eq!(b.txn.transaction("a").unwrap(), want_a);
    assert_eq!(b.txn.transaction("c").unwrap(), want_c);
    assert!(
        b.txn.allocate_producer_id().unwrap() > c.0,
        "the block survived the rewrite"
    );
    assert_eq!(end_txn(&b, 3, "c", c, true), NONE);
}

#[test]
fn concurrent_transactions_on_distinct_ids_all_commit() {
    let dir = tempfile::tempdir().unwrap();
    let b = start(dir.path(), TxnConfig::default());
    std::thread::scope(|scope| {
        for w in 0..8 {
            let b = &b;
            scope.spawn(move || {
                let id = format!("worker-{w}");
                let producer = init_txn(b, &id);
                for round in 0..5 {
                    let partition = (w + round) % 2;
                    let added = add_partitions(b, 3, &id, producer, &[("orders", partition)]);
                    assert_eq!(added, vec![("orders".into(), partition, NONE)]);
                    // Sequences count per partition: this partition gets every other round.
                    produce(b, &tp("orders", partition), producer, round / 2, 1).unwrap();
                    assert_eq!(end_txn(b, 3, &id, producer, true), NONE);
                }
            });
        }
    });
    for p in 0..2 {
        let partition = tp("orders", p);
        let (lso, leo) = lso_and_leo(&b, &partition);
        assert_eq!(lso, leo);
        assert_eq!(committed_records(&b, &partition), 20);
        assert_eq!(markers(&b, &partition).len(), 20);
    }
    for w in 0..8 {
        assert_eq!(
            b.txn.transaction(&format!("worker-{w}")).unwrap().state,
            TxnState::CompleteCommit
        );
    }
}

#[test]
fn markers_that_cannot_be_written_are_completed_after_a_restart() {
    use mirrorlog_segment::io::{Fault, FaultKind, IoOp, SimStorage, TornTail};
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(T0);
    let open_sim_logs = |sim: &Arc<SimStorage>| {
        let storage: Arc<dyn Storage> = sim.clone();
        let dyn_clock: Arc<dyn Clock> = clock.clone();
        Arc::new(
            LogManager::open(LogManagerConfig::new(dir.path()), storage, dyn_clock)
                .unwrap()
                .0,
        )
    };
    let sim = Arc::new(SimStorage::new());
    let logs = open_sim_logs(&sim);
    for p in 0..2 {
        logs.create(&tp("orders", p), TopicId([7; 16]), LogConfig::default())
            .unwrap();
    }
    let b = open_txn(&logs, &clock, TxnConfig::default());
    let (p0, p1) = (tp("orders", 0), tp("orders", 1));
    let producer = init_txn(&b, "tx");
    add_partitions(&b, 3, "tx", producer, &[("orders", 0), ("orders", 1)]);
    produce(&b, &p0, producer, 0, 1).unwrap();
    produce(&b, &p1, producer, 0, 1).unwrap();
    // The next write to orders-1 (its marker) fails; the engine then takes the data directory
    // offline and refuses writes to every partition in it until it is reopened — so orders-0's
    // marker lands only if it was written before orders-1's failed.
    sim.inject(Fault::new(IoOp::WriteAt, FaultKind::Eio).on_path("orders-1"));

    // The outcome is decided once PrepareCommit is durable: the producer is told so.
    assert_eq!(end_txn(&b, 3, "tx", producer, true), NONE);
    assert_eq!(sim.pending_faults(), 0, "the marker write hit the fault");
    assert_eq!(
        b.txn.transaction("tx").unwrap().state,
        TxnState::PrepareCommit
    );
    let p0_markers_before = markers(&b, &p0).len();
    assert!(p0_markers_before <= 1);
    assert!(markers(&b, &p1).is_empty());
    // Until every marker is written, the producer's next steps wait.
    assert_eq!(
        add_partitions(&b, 3, "tx", producer, &[("orders", 0)]),
        vec![(
            "orders".into(),
            0,
            code(ResponseError::ConcurrentTransactions)
        )]
    );
    assert_eq!(
        end_txn(&b, 3, "tx", producer, true),
        code(ResponseError::ConcurrentTransactions)
    );
    assert_eq!(
        init(&b, 5, Some("tx"), 60_000).error_code,
        code(ResponseError::ConcurrentTransactions)
    );
    b.txn.tick();
    assert_eq!(
        b.txn.transaction("tx").unwrap().state,
        TxnState::PrepareCommit,
        "the partition stays failed, so the retry fails too"
    );

    // The broker restarts: the partition is recovered and the transaction completed.
    drop(b);
    drop(logs);
    let sim = Arc::new(sim.crash(TornTail::None));
    let b = open_txn(&open_sim_logs(&sim), &clock, TxnConfig::default());
    assert_eq!(
        b.txn.transaction("tx").unwrap().state,
        TxnState::CompleteCommit
    );
    assert_eq!(
        markers(&b, &p1),
        vec![(ControlRecordType::Commit, producer.0, producer.1, 1)]
    );
    // p0's marker is written again after the restart. One written before the failure
    // survives the crash only if its sync ran before orders-1's failure took the directory
    // offline (the markers are written in parallel): so one or two markers, never none.
    let p0_markers_after = markers(&b, &p0).len();
    assert!(
        (1..=p0_markers_before + 1).contains(&p0_markers_after),
        "p0 has {p0_markers_after} markers after the restart, {p0_markers_before} before"
    );
    for partition in [&p0, &p1] {
        let (lso, leo) = lso_and_leo(&b, partition);
        assert_eq!(lso, leo);
        assert_eq!(committed_records(&b, partition), 1);
    }
    assert_eq!(
        add_partitions(&b, 3, "tx", producer, &[("orders", 0)]),
        vec![("orders".into(), 0, NONE)]
    );
}

/// A transactional id longer than the 32767 bytes a `TransactionLogKey` string can hold (legal
/// on the wire: InitProducerId v2+ uses a compact string) is refused with INVALID_REQUEST and
/// leaves nothing behind. It used to panic while encoding the key, with the new id's entry
/// already in the map; once idle past `transactional.id.expiration.ms`, `tick` panicked again
/// writing its tombstone, which killed `mirrorlog serve`'s ticker thread (found in review).
#[test]
fn an_oversized_transactional_id_is_refused_and_leaves_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    let config = TxnConfig {
        transactional_id_expiration_ms: 10_000,
        remove_expired_transaction_cleanup_interval_ms: 1_000,
        ..TxnConfig::default()
    };
    let b = start(dir.path(), config);
    let long = "x".repeat(40_000);
    let init_result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        init(&b, 5, Some(&long), 60_000)
    }));
    let init_panicked = init_result.is_err();
    if let Ok(r) = &init_result {
        assert_eq!(r.error_code, code(ResponseError::InvalidRequest));
    }
    let left_in_memory = b.txn.transaction(&long).is_some();
    b.clock.advance(20_000);
    let tick_panicked =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| b.txn.tick())).is_err();
    assert!(
        !init_panicked && !tick_panicked && !left_in_memory,
        "InitProducerId panicked: {init_panicked}; unpersisted entry left in memory: \
         {left_in_memory}; tick panicked: {tick_panicked}"
    );
}

/// The producer id's epoch is exhausted (32766) and a stale incarnation's InitProducerId
/// (KIP-360, v3+) expects an older epoch: PRODUCER_FENCED, not a panic (the exhaustion check
/// asserted before the expected epoch was looked at; found in review).
#[test]
fn a_stale_expected_epoch_at_exhaustion_is_fenced() {
    let dir = tempfile::tempdir().unwrap();
    let b = start(dir.path(), TxnConfig::default());
    let (pid, _) = init_txn(&b, "tx");
    let mut m = b.txn.transaction("tx").unwrap();
    m.producer_epoch = ProducerEpoch(i16::MAX - 2);
    write_state_record(&b, "tx", &m);
    let b = crash_and_reopen(b, dir.path(), TxnConfig::default());
    assert_eq!(init_txn(&b, "tx"), (pid, i16::MAX - 1));
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        init_expecting(&b, 5, Some("tx"), 60_000, (pid, i16::MAX - 2))
    }));
    let r = r.expect("InitProducerId with a stale expected epoch must not panic");
    assert_eq!(r.error_code, code(ResponseError::ProducerFenced));
}
