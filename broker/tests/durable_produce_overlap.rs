//! An `acks = -1` Produce naming several partitions waits for their syncs side by side: the
//! storage's `.log` syncs here each wait (up to a hang guard) until another is in flight, and the
//! test checks two were. Waited for one after another, every sync would sit out the guard alone.
//! Also: the helper threads are pooled, not started per request.

use bytes::Bytes;
use kafka_protocol::messages::ProduceRequest;
use kafka_protocol::messages::TopicName;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::protocol::StrBytes;
use mirrorlog_broker::broker::{Broker, BrokerConfig};
use mirrorlog_broker::handlers::produce;
use mirrorlog_engine::clock::ManualClock;
use mirrorlog_engine::config::LogConfig;
use mirrorlog_index::TimestampMs;
use mirrorlog_segment::BatchBuilder;
use mirrorlog_segment::io::{IoResult, OpenMode, PwriteStorage, Storage, StorageFile};
use parking_lot::{Condvar, Mutex};
use std::os::fd::RawFd;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

const NOW: i64 = 1_700_000_000_000;
/// Only a guard against a hung test; nothing is timed.
const HANG: Duration = Duration::from_secs(60);

/// Counts `.log` syncs in flight; while armed, each waits until a second one is in flight.
#[derive(Default)]
struct Gate {
    state: Mutex<GateState>,
    changed: Condvar,
}

#[derive(Default)]
struct GateState {
    armed: bool,
    in_flight: usize,
    max_in_flight: usize,
    syncs: usize,
}

impl Gate {
    fn enter(&self) {
        let mut st = self.state.lock();
        st.in_flight += 1;
        st.syncs += 1;
        st.max_in_flight = st.max_in_flight.max(st.in_flight);
        self.changed.notify_all();
        if st.armed && st.in_flight < 2 {
            let _ = self
                .changed
                .wait_while_for(&mut st, |s| s.in_flight < 2 && s.armed, HANG);
        }
    }

    fn leave(&self) {
        self.state.lock().in_flight -= 1;
    }
}

struct GatedStorage {
    inner: PwriteStorage,
    gate: Arc<Gate>,
}

impl std::fmt::Debug for GatedStorage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("GatedStorage")
    }
}

impl Storage for GatedStorage {
    fn name(&self) -> &'static str {
        "gated"
    }
    fn open(&self, path: &Path, mode: OpenMode) -> IoResult<Arc<dyn StorageFile>> {
        let inner = self.inner.open(path, mode)?;
        if path.extension().is_some_and(|e| e == "log") {
            return Ok(Arc::new(GatedFile {
                inner,
                gate: self.gate.clone(),
            }));
        }
        Ok(inner)
    }
    mirrorlog_segment::delegate_directory_ops!();
}

#[derive(Debug)]
struct GatedFile {
    inner: Arc<dyn StorageFile>,
    gate: Arc<Gate>,
}

impl std::fmt::Debug for Gate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Gate")
    }
}

impl StorageFile for GatedFile {
    fn path(&self) -> &Path {
        self.inner.path()
    }
    fn write_at(&self, buf: Bytes, pos: u64) -> IoResult<()> {
        self.inner.write_at(buf, pos)
    }
    fn write_all_at(&self, bufs: &[Bytes], pos: u64, durable: bool) -> IoResult<()> {
        self.inner.write_all_at(bufs, pos, durable)
    }
    fn read_at(&self, buf: &mut [u8], pos: u64) -> IoResult<usize> {
        self.inner.read_at(buf, pos)
    }
    fn sync_data(&self) -> IoResult<()> {
        self.gate.enter();
        let r = self.inner.sync_data();
        self.gate.leave();
        r
    }
    fn set_len(&self, len: u64) -> IoResult<()> {
        self.inner.set_len(len)
    }
    fn len(&self) -> IoResult<u64> {
        self.inner.len()
    }
    fn data_range(&self, pos: u64) -> IoResult<Option<(u64, u64)>> {
        self.inner.data_range(pos)
    }
    fn finish_appends(&self) -> IoResult<()> {
        self.inner.finish_appends()
    }
    fn raw_fd(&self) -> Option<RawFd> {
        self.inner.raw_fd()
    }
}

fn request(partitions: i32, round: usize) -> ProduceRequest {
    let mut r = ProduceRequest::default();
    r.acks = -1;
    r.timeout_ms = 30_000;
    let mut t = TopicProduceData::default();
    t.name = TopicName(StrBytes::from_static_str("t"));
    for p in 0..partitions {
        let mut pd = PartitionProduceData::default();
        pd.index = p;
        let v = format!("r{round}-p{p}");
        pd.records = Some(
            BatchBuilder::new()
                .record(TimestampMs(NOW), None, Some(v.as_bytes()))
                .build()
                .into_bytes(),
        );
        t.partition_data.push(pd);
    }
    r.topic_data.push(t);
    r
}

#[test]
fn a_durable_request_waits_for_its_partitions_syncs_side_by_side() {
    let dir = tempfile::tempdir().unwrap();
    let gate = Arc::new(Gate::default());
    let storage = Arc::new(GatedStorage {
        inner: PwriteStorage::new(),
        gate: gate.clone(),
    });
    let mut config = BrokerConfig::new(dir.path(), "127.0.0.1", 9092);
    // No zeros ahead: their thread's syncs would count as syncs in flight.
    config.logs.preallocate = false;
    let b = Broker::open(config, storage, ManualClock::new(NOW)).unwrap();
    b.topics
        .create(&b.logs, "t", 4, LogConfig::default(), None)
        .unwrap();

    {
        let mut st = gate.state.lock();
        st.armed = true;
        st.max_in_flight = 0;
    }
    let r = produce::handle(&b, request(4, 0), 9).unwrap();
    gate.state.lock().armed = false;
    let codes: Vec<_> = r.responses[0]
        .partition_responses
        .iter()
        .map(|p| (p.index, p.error_code, p.base_offset))
        .collect();
    assert_eq!(codes, vec![(0, 0, 0), (1, 0, 0), (2, 0, 0), (3, 0, 0)]);
    assert!(
        gate.state.lock().max_in_flight >= 2,
        "the partitions' syncs never overlapped"
    );

    // Many wide requests: every one durable and answered, the helpers reused.
    for round in 1..=40 {
        let r = produce::handle(&b, request(4, round), 9).unwrap();
        for p in &r.responses[0].partition_responses {
            assert_eq!((p.error_code, p.base_offset), (0, round as i64));
        }
    }
    for p in 0..4 {
        let h = b.partition("t", p).unwrap();
        assert!(h.read().recovery_point().get() >= 40, "durable on return");
    }
    let n = b.durable_waiters.threads();
    assert!(
        (1..=15).contains(&n),
        "helper threads are pooled (at most 15), not one per request and partition: {n}"
    );
}
