//! Long polls and transaction markers written by the broker's periodic tick.

use bytes::Bytes;
use kafka_protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnTopic;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    AddPartitionsToTxnRequest, ApiKey, FetchRequest, InitProducerIdRequest, ProduceRequest,
    RequestKind, ResponseKind, TopicName, TransactionalId,
};
use kafka_protocol::protocol::StrBytes;
use mirrorlog_broker::broker::{Broker, BrokerConfig, Coordinator};
use mirrorlog_broker::handlers::{fetch, produce};
use mirrorlog_broker::server::RequestContext;
use mirrorlog_broker::txn::{TxnConfig, TxnCoordinator, TxnOffsetsSink};
use mirrorlog_engine::clock::ManualClock;
use mirrorlog_engine::config::LogConfig;
use mirrorlog_index::{ProducerEpoch, ProducerId, Sequence, TimestampMs};
use mirrorlog_segment::BatchBuilder;
use mirrorlog_segment::io::PwriteStorage;
use std::sync::Arc;
use std::sync::mpsc;
use std::time::{Duration, Instant};

const NOW: i64 = 1_700_000_000_000;

fn s(x: &str) -> StrBytes {
    StrBytes::from_string(x.to_string())
}

struct NoSink;
impl TxnOffsetsSink for NoSink {
    fn partition_for(&self, _g: &str) -> i32 {
        0
    }
    fn complete_txn(&self, _p: i64, _e: i16, _c: bool, _partitions: &[i32]) {}
}

/// As `coordinators::Txns`: the broker's tick drives the transaction coordinator's tick.
struct TxnTick(Arc<TxnCoordinator>);
impl Coordinator for TxnTick {
    fn apis(&self) -> Vec<ApiKey> {
        vec![]
    }
    fn supported_versions(&self, _api: ApiKey) -> Option<(i16, i16)> {
        None
    }
    fn handle(&self, _ctx: &RequestContext, _r: RequestKind) -> ResponseKind {
        unreachable!()
    }
    fn tick(&self, _now_ms: i64) -> bool {
        self.0.tick()
    }
}

fn produce_one(b: &Broker, topic: &str, p: i32, records: Bytes) -> i16 {
    let mut r = ProduceRequest::default();
    r.acks = 1;
    r.timeout_ms = 30_000;
    // The test's producer is transactional (a transactional batch needs its id, as in Kafka).
    r.transactional_id = Some(TransactionalId(s("tx")));
    let mut pd = PartitionProduceData::default();
    pd.index = p;
    pd.records = Some(records);
    let mut t = TopicProduceData::default();
    t.name = TopicName(s(topic));
    t.partition_data.push(pd);
    r.topic_data.push(t);
    let resp = produce::handle(b, r, 9).unwrap();
    resp.responses[0].partition_responses[0].error_code
}

/// A transaction that times out is aborted by the broker's tick: its ABORT marker moves the
/// LSO, so a READ_COMMITTED long poll waiting at the old LSO has data and must answer (Kafka
/// completes the DelayedFetch when the marker is appended). It used to sleep until max_wait_ms,
/// as only coordinator requests woke long polls (found in review). The poll here waits up to
/// ten minutes, so only a wake-up answers it within the hang guard.
#[test]
fn a_read_committed_long_poll_wakes_when_a_timed_out_transaction_is_aborted() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(NOW);
    let b = Broker::open(
        BrokerConfig::new(dir.path(), "127.0.0.1", 9092),
        Arc::new(PwriteStorage::new()),
        clock.clone(),
    )
    .unwrap();
    b.topics
        .create(&b.logs, "t", 1, LogConfig::default(), None)
        .unwrap();
    let txn = TxnCoordinator::open(
        b.logs.clone(),
        Arc::new(NoSink),
        clock.clone(),
        TxnConfig {
            abort_timed_out_transaction_cleanup_interval_ms: 1_000,
            ..TxnConfig::default()
        },
    )
    .unwrap();
    b.add_coordinator(Arc::new(TxnTick(txn.clone())));

    let mut init = InitProducerIdRequest::default();
    init.transactional_id = Some(TransactionalId(s("tx")));
    init.transaction_timeout_ms = 5_000;
    init.producer_id = (-1).into();
    init.producer_epoch = -1;
    let ResponseKind::InitProducerId(ir) = txn.handle(5, RequestKind::InitProducerId(init)) else {
        panic!()
    };
    assert_eq!(ir.error_code, 0);
    let mut add = AddPartitionsToTxnRequest::default();
    add.v3_and_below_transactional_id = TransactionalId(s("tx"));
    add.v3_and_below_producer_id = ir.producer_id;
    add.v3_and_below_producer_epoch = ir.producer_epoch;
    let mut at = AddPartitionsToTxnTopic::default();
    at.name = TopicName(s("t"));
    at.partitions = vec![0];
    add.v3_and_below_topics = vec![at];
    let ResponseKind::AddPartitionsToTxn(_) = txn.handle(3, RequestKind::AddPartitionsToTxn(add))
    else {
        panic!()
    };
    let mut bb = BatchBuilder::new()
        .producer(
            ProducerId(ir.producer_id.0),
            ProducerEpoch(ir.producer_epoch),
            Sequence(0),
        )
        .transactional(true);
    bb.append(TimestampMs(NOW), None, Some(b"v0"), &[]);
    assert_eq!(produce_one(&b, "t", 0, bb.build().into_bytes()), 0);

    std::thread::scope(|scope| {
        let (tx, rx) = mpsc::channel();
        let b = &b;
        scope.spawn(move || {
            let mut r = FetchRequest::default();
            r.max_wait_ms = 600_000;
            r.min_bytes = 1;
            r.max_bytes = 1 << 20;
            r.session_epoch = -1;
            r.isolation_level = 1;
            let mut fp = FetchPartition::default();
            fp.partition = 0;
            fp.fetch_offset = 0;
            fp.partition_max_bytes = 1 << 20;
            let mut t = FetchTopic::default();
            t.topic = TopicName(s("t"));
            t.partitions.push(fp);
            r.topics.push(t);
            let start = Instant::now();
            let resp = fetch::handle(b, r, 12);
            tx.send((resp, start.elapsed())).unwrap();
        });
        std::thread::sleep(Duration::from_millis(200));
        clock.advance(10_000);
        b.tick();
        let lso = b
            .partition("t", 0)
            .unwrap()
            .read()
            .last_stable_offset()
            .get();
        assert_eq!(lso, 2, "the tick aborted the transaction (batch + marker)");
        let (resp, _took) = rx
            .recv_timeout(Duration::from_secs(120))
            .expect("the long poll was not woken by the abort marker");
        let d = &resp.responses[0].partitions[0];
        assert_eq!(d.last_stable_offset, 2);
        assert!(d.records.as_ref().is_some_and(|r| !r.is_empty()));
    });
}
