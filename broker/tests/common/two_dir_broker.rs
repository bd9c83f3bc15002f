//! A broker over two data directories on the simulated storage, with its coordinators: how the
//! tests put a coordinator's internal partition in a directory that goes offline at a restart.
//! Requests go through the broker's dispatcher as a connection's would.

use kafka_protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnTopic;
use kafka_protocol::messages::find_coordinator_request::FindCoordinatorRequest;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    AddPartitionsToTxnRequest, ApiKey, EndTxnRequest, InitProducerIdRequest, ProduceRequest,
    ProducerId, RequestHeader, RequestKind, ResponseKind, TopicName, TransactionalId,
};
use kafka_protocol::protocol::StrBytes;
use mirrorlog_broker::broker::{Broker, BrokerConfig};
use mirrorlog_broker::server::{Handler, RequestContext};
use mirrorlog_broker::txn::TxnConfig;
use mirrorlog_broker::txn::state_log::partition_for;
use mirrorlog_engine::clock::ManualClock;
use mirrorlog_engine::config::LogConfig;
use mirrorlog_index::{ProducerEpoch, ProducerId as Pid, Sequence, TimestampMs, TopicPartition};
use mirrorlog_segment::BatchBuilder;
use mirrorlog_segment::io::SimStorage;
use mirrorlog_segment::io::{Fault, FaultKind, IoOp};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A string of the protocol.
pub fn s(x: &str) -> StrBytes {
    StrBytes::from_string(x.to_string())
}

/// Opens the broker on `d1` and `d2` (cluster id `c`, one recovery thread) and installs its
/// coordinators, which must install whatever directory is offline.
pub fn open(d1: &Path, d2: &Path, sim: &Arc<SimStorage>, clock: &Arc<ManualClock>) -> Arc<Broker> {
    let mut config = BrokerConfig::new(d1, "127.0.0.1", 9092);
    config.cluster_id = Some("c".into());
    config.logs.data_dirs = vec![d1.to_path_buf(), d2.to_path_buf()];
    config.logs.recovery_threads = 1;
    let b = Arc::new(Broker::open(config, sim.clone(), clock.clone()).unwrap());
    b.register_arc();
    mirrorlog_broker::coordinators::install(&b)
        .expect("the coordinators install with a data directory offline");
    b
}

/// Two data directories on one simulated storage, and a manual clock: what a test opens a
/// broker on, closes it and opens it again (after arming a fault) as a restart.
pub struct TwoDirs {
    /// The first data directory.
    pub d1: tempfile::TempDir,
    /// The second data directory.
    pub d2: tempfile::TempDir,
    /// The storage both are on.
    pub sim: Arc<SimStorage>,
    /// The broker's clock.
    pub clock: Arc<ManualClock>,
}

impl TwoDirs {
    /// Two empty directories, the clock at `now_ms`.
    pub fn new(now_ms: i64) -> TwoDirs {
        TwoDirs {
            d1: tempfile::tempdir().unwrap(),
            d2: tempfile::tempdir().unwrap(),
            sim: Arc::new(SimStorage::new()),
            clock: ManualClock::new(now_ms),
        }
    }

    /// [`open`] on these directories.
    pub fn open(&self) -> Arc<Broker> {
        open(self.d1.path(), self.d2.path(), &self.sim, &self.clock)
    }
}

/// The data directory holding `tp`.
pub fn dir_of(b: &Broker, tp: &TopicPartition) -> PathBuf {
    b.logs.get(tp).unwrap().data_dir().to_path_buf()
}

/// (last stable offset, log end offset) of `tp`.
pub fn lso_and_leo(b: &Broker, tp: &TopicPartition) -> (i64, i64) {
    let log = b.logs.get(tp).unwrap();
    let log = log.read();
    (log.last_stable_offset().get(), log.log_end_offset().get())
}

/// How a test puts one partition of a transaction in a directory that fails, and nothing of the
/// transaction coordinator's: topic `t` (2 partitions) exists, `bad` is the directory that
/// holds neither `__transaction_state-0` nor `txn_id`'s state partition, `t_bad` the partition
/// of `t` in it.
pub struct SplitTxn {
    /// The directory [`fail_at_next_open`](Self::fail_at_next_open) fails.
    pub bad: PathBuf,
    /// A transactional id whose state is in the other directory.
    pub txn_id: String,
    /// The partition of `t` in `bad`.
    pub t_bad: TopicPartition,
}

impl SplitTxn {
    /// Creates topic `t` on `b` and picks the directory, id and partition.
    pub fn new(dirs: &TwoDirs, b: &Broker) -> SplitTxn {
        b.topics
            .create(&b.logs, "t", 2, LogConfig::default(), None)
            .unwrap();
        let parts = TxnConfig::default().transaction_state_partitions;
        let good = dir_of(b, &state_tp(0));
        let bad: PathBuf = if good == dirs.d1.path() {
            dirs.d2.path()
        } else {
            dirs.d1.path()
        }
        .into();
        let txn_id = (0..1000)
            .map(|i| format!("tx-{i}"))
            .find(|id| dir_of(b, &state_tp(partition_for(id, parts))) == good)
            .expect("an id whose state is in the good dir");
        let t_bad = (0..2)
            .map(|p| TopicPartition {
                topic: "t".into(),
                partition: p,
            })
            .find(|tp| dir_of(b, tp) == bad)
            .expect("a partition of t in the dir that fails");
        SplitTxn { bad, txn_id, t_bad }
    }

    /// Arms the fault that takes `bad` offline while the next start loads it (listing
    /// `t_bad`'s directory fails).
    pub fn fail_at_next_open(&self, dirs: &TwoDirs) {
        let fault_path = self.bad.join(self.t_bad.to_string());
        dirs.sim.inject(
            Fault::new(IoOp::ListDir, FaultKind::Eio).on_path(fault_path.to_str().unwrap()),
        );
    }
}

/// Shuts the broker down cleanly (it must not be shared any more). Its mirrors stop first:
/// their threads hold the broker for the length of each pass, so the unwrap raced a pass
/// ("broker still shared", seen once in CI).
pub fn close(b: Arc<Broker>) {
    b.mirrors.shutdown();
    Arc::try_unwrap(b)
        .map_err(|_| "broker still shared")
        .unwrap()
        .shutdown()
        .unwrap();
}

/// Answers `req`, an `api` request of version `v`, through the broker's dispatcher.
pub fn call(b: &Broker, api: ApiKey, v: i16, req: RequestKind) -> ResponseKind {
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

/// InitProducerId v4 with a 60 s transaction timeout: (error, producer id, epoch).
pub fn init(b: &Broker, txn_id: Option<&str>) -> (i16, i64, i16) {
    let mut r = InitProducerIdRequest::default();
    r.transactional_id = txn_id.map(|t| TransactionalId(s(t)));
    r.transaction_timeout_ms = 60_000;
    let ResponseKind::InitProducerId(resp) = call(b, ApiKey::InitProducerId, 4, r.into()) else {
        panic!("not an InitProducerId response");
    };
    (resp.error_code, resp.producer_id.0, resp.producer_epoch)
}

/// Partition `p` of `__transaction_state`.
pub fn state_tp(p: i32) -> TopicPartition {
    TopicPartition {
        topic: "__transaction_state".into(),
        partition: p,
    }
}

/// AddPartitionsToTxn v3 of `tp` to the transaction of (`pid`, `epoch`): the partition's error.
pub fn add_partition(b: &Broker, txn_id: &str, pid: i64, epoch: i16, tp: &TopicPartition) -> i16 {
    let mut r = AddPartitionsToTxnRequest::default();
    r.v3_and_below_transactional_id = TransactionalId(s(txn_id));
    r.v3_and_below_producer_id = ProducerId(pid);
    r.v3_and_below_producer_epoch = epoch;
    r.v3_and_below_topics = vec![
        AddPartitionsToTxnTopic::default()
            .with_name(TopicName(s(&tp.topic)))
            .with_partitions(vec![tp.partition]),
    ];
    let ResponseKind::AddPartitionsToTxn(resp) = call(b, ApiKey::AddPartitionsToTxn, 3, r.into())
    else {
        panic!("not an AddPartitionsToTxn response");
    };
    resp.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code
}

/// EndTxn v3 committing the transaction of (`pid`, `epoch`): its error.
pub fn end_txn(b: &Broker, txn_id: &str, pid: i64, epoch: i16) -> i16 {
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

/// FindCoordinator of `key_type` (0 GROUP, 1 TRANSACTION): v3 for one key (checking the node
/// it names), v4 for several; the error of each key.
pub fn find(b: &Broker, key_type: i8, keys: &[&str]) -> Vec<i16> {
    if let [key] = keys {
        let mut r = FindCoordinatorRequest::default();
        r.key = s(key);
        r.key_type = key_type;
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
    r.key_type = key_type;
    r.coordinator_keys = keys.iter().map(|k| s(k)).collect();
    let ResponseKind::FindCoordinator(resp) = call(b, ApiKey::FindCoordinator, 4, r.into()) else {
        panic!("not a FindCoordinator response");
    };
    resp.coordinators.iter().map(|c| c.error_code).collect()
}

/// A transactional Produce v9 of one batch of (`pid`, `epoch`) at `timestamp_ms` to `tp`: its
/// error.
pub fn produce_txn(
    b: &Broker,
    txn_id: &str,
    (pid, epoch): (i64, i16),
    timestamp_ms: i64,
    tp: &TopicPartition,
) -> i16 {
    let mut bb = BatchBuilder::new()
        .producer(Pid(pid), ProducerEpoch(epoch), Sequence(0))
        .transactional(true);
    bb.append(TimestampMs(timestamp_ms), None, Some(b"v"), &[]);
    let mut pd = PartitionProduceData::default();
    pd.index = tp.partition;
    pd.records = Some(bb.build().into_bytes());
    let mut t = TopicProduceData::default();
    t.name = TopicName(s(&tp.topic));
    t.partition_data = vec![pd];
    let mut r = ProduceRequest::default();
    r.acks = -1;
    r.timeout_ms = 30_000;
    r.transactional_id = Some(TransactionalId(s(txn_id)));
    r.topic_data = vec![t];
    let ResponseKind::Produce(resp) = call(b, ApiKey::Produce, 9, r.into()) else {
        panic!("not a Produce response");
    };
    resp.responses[0].partition_responses[0].error_code
}
