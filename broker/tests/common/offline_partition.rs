//! A topic with one partition in a data directory that fails at load: what the tests of topic
//! administration beside an offline partition start from. Requests go to the handlers directly.

use kafka_protocol::protocol::StrBytes;
use mirrorlog_broker::broker::{Broker, BrokerConfig};
use mirrorlog_engine::clock::ManualClock;
use mirrorlog_segment::io::{Fault, FaultKind, IoOp, SimStorage};
use std::path::Path;
use std::sync::Arc;

/// A string of the protocol.
pub fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

/// The broker on `dirs`, on `sim`.
pub fn open(dirs: &[&Path], sim: &SimStorage) -> Broker {
    let mut config = BrokerConfig::new(dirs[0], "127.0.0.1", 9092);
    config.cluster_id = Some("test-cluster".into());
    config.logs.data_dirs = dirs.iter().map(|d| d.to_path_buf()).collect();
    config.logs.recovery_threads = 1;
    Broker::open(
        config,
        Arc::new(sim.clone()),
        ManualClock::new(1_700_000_000_000),
    )
    .unwrap()
}

/// The broker, its two data directories and their storage.
pub struct WithOfflinePartition {
    /// The first data directory (the internal topics').
    pub d1: tempfile::TempDir,
    /// The second data directory.
    pub d2: tempfile::TempDir,
    /// The storage both are on.
    pub sim: SimStorage,
    /// The broker, restarted with the partition's directory offline.
    pub broker: Broker,
}

/// Topic `t` of two partitions, one in each of two data directories, with `configs`, created
/// through CreateTopics; the broker is restarted with listing partition `offline` failing, so
/// that partition's whole directory is offline since start.
pub fn topic_t_with_partition_offline(
    offline: i32,
    configs: &[(&str, &str)],
) -> WithOfflinePartition {
    let d1 = tempfile::tempdir().unwrap();
    let d2 = tempfile::tempdir().unwrap();
    let sim = SimStorage::new();
    open(&[d1.path()], &sim).shutdown().unwrap();
    let b = open(&[d1.path(), d2.path()], &sim);
    super::configs::create_topic(&b, "t", 2, configs);
    let dir = b.partition("t", offline).unwrap().data_dir().to_path_buf();
    let other = b
        .partition("t", 1 - offline)
        .unwrap()
        .data_dir()
        .to_path_buf();
    assert_ne!(dir, other, "one partition per dir");
    b.shutdown().unwrap();
    let bad = dir.join(format!("t-{offline}"));
    sim.inject(Fault::new(IoOp::ListDir, FaultKind::Eio).on_path(bad.to_str().unwrap()));
    let broker = open(&[d1.path(), d2.path()], &sim);
    assert!(
        broker.partition("t", offline).is_none(),
        "its directory failed at load"
    );
    assert!(broker.partition("t", 1 - offline).is_some());
    WithOfflinePartition {
        d1,
        d2,
        sim,
        broker,
    }
}
