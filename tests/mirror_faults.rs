//! Mirroring under faults, checked byte for byte. The source is a real `mirrorlog serve` process
//! (so it can be SIGKILLed) reached by the mirror only through a TCP proxy in this test, which can
//! cut every connection or stall them; the destination broker and its mirror run in this process.
//! A producer keeps writing to the source (acks=all) throughout.
//!
//! 1. Network cut (connections reset, new ones refused), then a stall longer than the mirror's
//!    request timeout, then the source SIGKILLed and restarted — the mirror rides through all
//!    three without any partition going FAILED, catches up, and every destination partition is
//!    byte-identical to the source's at identical offsets.
//! 2. Failover under load: the topic is stopped while the producer still writes. The destination
//!    holds a byte-identical prefix of each source partition, then exactly the stop's
//!    MIRROR_PID_RESET batch, and takes produce requests.

mod common;

use bytes::Bytes;
use common::{Serve, free_port, reconnecting};
use mirrorlog_broker::client::Client;
use mirrorlog_broker::running::RunningBroker;
use mirrorlog_broker::source_client::{KafkaSource, KafkaSourceConfig};
use mirrorlog_engine::clock::SystemClock;
use mirrorlog_engine::log::FetchIsolation;
use mirrorlog_engine::manager::{LogManager, LogManagerConfig, PartitionHandle};
use mirrorlog_index::{Offset, TimestampMs, TopicPartition};
use mirrorlog_mirror::manager::{MirrorConfig, MirrorManager, PartitionStatus};
use mirrorlog_mirror::source::{OffsetSpec, SourceCluster};
use mirrorlog_mirror::state::MirrorPartitionState;
use mirrorlog_segment::batch::{Batches, ControlRecordType};
use mirrorlog_segment::io::PwriteStorage;
use mirrorlog_segment::{BatchBuilder, Compression, RecordBatch};
use parking_lot::Mutex;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
use std::time::{Duration, Instant};

const TOPIC: &str = "events";
const PARTITIONS: i32 = 3;
/// Hang guard for every wait; never a verdict.
const DEADLINE: Duration = Duration::from_secs(120);

// ---------------------------------------------------------------------------------------------
// A TCP proxy that can pass, cut or stall.

const PASS: u8 = 0;
const CUT: u8 = 1;
const STALL: u8 = 2;

struct Proxy {
    port: u16,
    mode: Arc<AtomicU8>,
    conns: Arc<Mutex<Vec<TcpStream>>>,
}

impl Proxy {
    fn start(upstream: u16) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let mode = Arc::new(AtomicU8::new(PASS));
        let conns: Arc<Mutex<Vec<TcpStream>>> = Arc::default();
        let (m, c) = (mode.clone(), conns.clone());
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { continue };
                if m.load(Ordering::SeqCst) == CUT {
                    drop(client); // refused, as far as the client can tell
                    continue;
                }
                let Ok(server) = TcpStream::connect(("127.0.0.1", upstream)) else {
                    continue; // the source is down: the client sees its connection close
                };
                c.lock()
                    .extend([client.try_clone().unwrap(), server.try_clone().unwrap()]);
                pump(
                    client.try_clone().unwrap(),
                    server.try_clone().unwrap(),
                    m.clone(),
                );
                pump(server, client, m.clone());
            }
        });
        Proxy { port, mode, conns }
    }

    fn set(&self, mode: u8) {
        self.mode.store(mode, Ordering::SeqCst);
        if mode == CUT {
            for s in self.conns.lock().drain(..) {
                let _ = s.shutdown(Shutdown::Both);
            }
        }
    }
}

/// Copies `from` → `to` until either closes; while stalled, leaves bytes unread.
fn pump(mut from: TcpStream, mut to: TcpStream, mode: Arc<AtomicU8>) {
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            while mode.load(Ordering::SeqCst) == STALL {
                std::thread::sleep(Duration::from_millis(10));
            }
            let n = match from.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            if to.write_all(&buf[..n]).is_err() {
                break;
            }
        }
        let _ = from.shutdown(Shutdown::Both);
        let _ = to.shutdown(Shutdown::Both);
    });
}

// ---------------------------------------------------------------------------------------------
// Load and checks.

fn batch(n: u64) -> Bytes {
    let codec = if n.is_multiple_of(2) {
        Compression::None
    } else {
        Compression::Lz4
    };
    let mut b = BatchBuilder::new().compression(codec);
    for i in 0..10 {
        let v = format!("event-{n}-{i}-{}", "p".repeat(100 + (n % 300) as usize));
        b.append(TimestampMs(now_ms()), None, Some(v.as_bytes()), &[]);
    }
    b.build().into_bytes()
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// Produces acks=all batches to the source until told to stop, riding through its restarts.
struct Producer {
    stop: Arc<AtomicBool>,
    acked: Arc<AtomicU64>,
    /// Produce calls that failed (the source died with the request in flight: the batch may
    /// or may not be in its log; it is not retried).
    failed: Arc<AtomicU64>,
    thread: std::thread::JoinHandle<()>,
}

impl Producer {
    fn start(addr: String) -> Producer {
        let stop = Arc::new(AtomicBool::new(false));
        let acked = Arc::new(AtomicU64::new(0));
        let failed = Arc::new(AtomicU64::new(0));
        let (s, a, f) = (stop.clone(), acked.clone(), failed.clone());
        let thread = std::thread::spawn(move || {
            let mut client = None;
            let mut n = 0u64;
            while !s.load(Ordering::SeqCst) {
                let Some(c) = reconnecting(&mut client, &addr) else {
                    continue;
                };
                match c.produce(TOPIC, (n % PARTITIONS as u64) as i32, batch(n), -1, None) {
                    Ok(_) => {
                        a.fetch_add(1, Ordering::SeqCst);
                        n += 1;
                    }
                    Err(_) => {
                        // The source went away: reconnect, and count the batch as unknown.
                        f.fetch_add(1, Ordering::SeqCst);
                        n += 1;
                        client = None;
                    }
                }
                std::thread::sleep(Duration::from_millis(3));
            }
        });
        Producer {
            stop,
            acked,
            failed,
            thread,
        }
    }

    fn acked(&self) -> u64 {
        self.acked.load(Ordering::SeqCst)
    }

    /// Stops; returns (acknowledged, failed) produce calls.
    fn finish(self) -> (u64, u64) {
        self.stop.store(true, Ordering::SeqCst);
        self.thread.join().unwrap();
        (
            self.acked.load(Ordering::SeqCst),
            self.failed.load(Ordering::SeqCst),
        )
    }
}

/// Every batch of a partition, from its log start to its log end.
fn batches_of(h: &PartitionHandle) -> Vec<RecordBatch> {
    let log = h.read();
    let end = log.log_end_offset();
    let mut at = log.log_start_offset();
    let mut out = vec![];
    while at < end {
        let r = log.read(at, 1 << 20, FetchIsolation::LogEnd, true).unwrap();
        let Some(d) = r.records else { break };
        for b in Batches::new(d.slice.read_all().unwrap()) {
            let b = b.unwrap();
            at = b.next_offset();
            out.push(b);
        }
    }
    out
}

/// The source's partitions, read from its data dir with the engine once the process stopped.
fn source_batches(dir: &Path) -> Vec<Vec<RecordBatch>> {
    let (mgr, _) = LogManager::open(
        LogManagerConfig::new(dir),
        Arc::new(PwriteStorage::new()),
        Arc::new(SystemClock),
    )
    .unwrap();
    let out = (0..PARTITIONS)
        .map(|p| {
            batches_of(
                &mgr.get(&TopicPartition {
                    topic: TOPIC.into(),
                    partition: p,
                })
                .unwrap(),
            )
        })
        .collect();
    mgr.shutdown().unwrap();
    out
}

fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(start.elapsed() < DEADLINE, "gave up waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn no_failures(st: &[PartitionStatus]) {
    for s in st {
        assert!(
            s.failure.is_none(),
            "{}-{} went FAILED: {:?}",
            s.topic,
            s.partition,
            s.failure
        );
    }
}

fn mirror_config() -> MirrorConfig {
    let mut cfg = MirrorConfig::new("faults");
    cfg.max_wait_ms = 100;
    cfg.metadata_refresh_interval_ms = 200;
    cfg.retry.initial_backoff_ms = 50;
    cfg.retry.max_backoff_ms = 500;
    cfg
}

struct Setup {
    _dirs: (tempfile::TempDir, tempfile::TempDir),
    source_dir: std::path::PathBuf,
    source_port: u16,
    source: Serve,
    proxy: Proxy,
    dest: RunningBroker,
    mirror: Arc<MirrorManager>,
    /// A client of the source of its own, for its high watermarks.
    probe: Arc<dyn SourceCluster>,
}

fn setup() -> Setup {
    let dirs = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let source_dir = dirs.0.path().to_path_buf();
    let source_port = free_port();
    let proxy = Proxy::start(source_port);
    // Metadata sends the mirror back through the proxy, never straight to the source.
    let advertised = format!("127.0.0.1:{}", proxy.port);
    let source = Serve::start_with(
        &source_dir,
        source_port,
        "error",
        &["--advertised-listener", &advertised],
    );
    Client::connect(&source.addr)
        .unwrap()
        .create_topic(TOPIC, PARTITIONS, &[])
        .unwrap();
    let dest = RunningBroker::start_local(dirs.1.path(), 2).unwrap();
    let mut sc = KafkaSourceConfig::new(vec![advertised]);
    // A stall must be noticed: a request without an answer for 1.5 s is retried elsewhere.
    sc.request_timeout_ms = 1500;
    let src: Arc<dyn SourceCluster> = KafkaSource::new(sc.clone()).unwrap();
    let probe: Arc<dyn SourceCluster> = KafkaSource::new(sc).unwrap();
    let mirror = dest
        .broker
        .mirrors
        .create(&dest.broker, mirror_config(), src)
        .unwrap();
    mirror.start_topics(&[TOPIC.to_string()]).unwrap();
    Setup {
        _dirs: dirs,
        source_dir,
        source_port,
        source,
        proxy,
        dest,
        mirror,
        probe,
    }
}

/// Whether every partition's destination log end is the source's high watermark, asked of the
/// source now. (The mirror's own view of the source's high watermark is as old as its last
/// fetch answer: right after the producer's last acknowledgement it can still equal the
/// destination's end while the source is ahead.)
fn drained(s: &Setup) -> bool {
    let st = s.mirror.describe();
    st.len() == PARTITIONS as usize
        && st.iter().all(|p| {
            p.state == MirrorPartitionState::Mirroring
                && s.probe
                    .list_offset(TOPIC, p.partition, OffsetSpec::Latest)
                    .is_ok_and(|(hw, _)| hw == p.log_end_offset)
        })
}

fn mirrored(m: &MirrorManager) -> i64 {
    m.describe().iter().map(|s| s.log_end_offset.get()).sum()
}

#[test]
fn the_mirror_rides_through_a_cut_a_stall_and_a_source_crash_and_ends_byte_identical() {
    let mut s = setup();
    let producer = Producer::start(s.source.addr.clone());
    wait_for("first mirrored records", || mirrored(&s.mirror) > 0);

    // 1. Cut: every proxied connection reset, new ones dropped, for a second.
    let before = mirrored(&s.mirror);
    s.proxy.set(CUT);
    std::thread::sleep(Duration::from_millis(1000));
    s.proxy.set(PASS);
    wait_for("mirroring after the cut", || mirrored(&s.mirror) > before);
    no_failures(&s.mirror.describe());

    // 2. Stall: connections stay open but nothing moves, longer than the request timeout.
    let before = mirrored(&s.mirror);
    s.proxy.set(STALL);
    std::thread::sleep(Duration::from_millis(2500));
    s.proxy.set(PASS);
    wait_for("mirroring after the stall", || mirrored(&s.mirror) > before);
    no_failures(&s.mirror.describe());

    // 3. The source crashes and comes back on the same port.
    let before = mirrored(&s.mirror);
    s.source.kill();
    std::thread::sleep(Duration::from_millis(300));
    s.source = Serve::start_with(
        &s.source_dir,
        s.source_port,
        "error",
        &[
            "--advertised-listener",
            &format!("127.0.0.1:{}", s.proxy.port),
        ],
    );
    wait_for("mirroring after the source restart", || {
        mirrored(&s.mirror) > before
    });
    // The producer resumed after the crash: waited for, not given a fixed 500 ms (on a loaded
    // machine its reconnect and first acks=all produce to the recovered source can take longer).
    let acked_during = producer.acked();
    wait_for("the producer to resume after the crash", || {
        producer.acked() > acked_during
    });
    let (acked, failed) = producer.finish();

    // Drained: the destination's log end reaches the source's high watermark everywhere.
    wait_for("the mirror to drain", || {
        no_failures(&s.mirror.describe());
        drained(&s)
    });
    // The high watermarks the mirror saw must be the source's final ones: stop the source and
    // compare everything.
    let ends: Vec<Offset> = s
        .mirror
        .describe()
        .iter()
        .map(|p| p.log_end_offset)
        .collect();
    s.mirror.shutdown();
    assert_eq!(s.source.stop(), Some(0));
    let src = source_batches(&s.source_dir);
    let mut total = 0;
    for p in 0..PARTITIONS {
        let dst = batches_of(&s.dest.broker.partition(TOPIC, p).unwrap());
        let src = &src[p as usize];
        assert_eq!(
            src.last().map_or(Offset(0), |b| b.next_offset()),
            ends[p as usize],
            "partition {p}: the mirror drained to the source's end"
        );
        assert_eq!(dst.len(), src.len(), "partition {p}: batch count");
        for (d, s) in dst.iter().zip(src) {
            assert_eq!(d.base_offset(), s.base_offset(), "partition {p}");
            assert_eq!(
                d.as_bytes(),
                s.as_bytes(),
                "partition {p} batch at {}",
                s.base_offset()
            );
        }
        total += src.len();
    }
    // Every acknowledged batch is there; a batch whose produce failed with the source's crash
    // may be there too (it was not retried, so never twice).
    assert!(
        (acked..=acked + failed).contains(&(total as u64)),
        "{total} batches on the source: {acked} acknowledged, {failed} failed"
    );
    let Setup { dest, mirror, .. } = s;
    drop(mirror); // the broker shuts its mirrors down; ours must let go of the manager
    dest.shutdown().unwrap();
}

#[test]
fn failover_under_load_leaves_a_byte_identical_prefix_and_a_writable_topic() {
    let mut s = setup();
    let producer = Producer::start(s.source.addr.clone());
    wait_for("a few hundred mirrored records", || {
        mirrored(&s.mirror) > 300
    });
    // Stop = failover, with the producer still writing to the source.
    s.mirror.stop_topic(TOPIC).unwrap();
    let (acked, _) = producer.finish();
    assert!(acked > 0);
    let st = s.mirror.describe();
    assert!(
        st.iter().all(|p| p.state == MirrorPartitionState::Stopped),
        "{st:?}"
    );
    // The failed-over topic takes produce requests.
    let mut c = Client::connect(&s.dest.addr.to_string()).unwrap();
    let written = c.produce(TOPIC, 0, batch(1_000_000), -1, None).unwrap();

    s.mirror.shutdown();
    assert_eq!(s.source.stop(), Some(0));
    let src = source_batches(&s.source_dir);
    for p in 0..PARTITIONS {
        let dst = batches_of(&s.dest.broker.partition(TOPIC, p).unwrap());
        let src = &src[p as usize];
        // A prefix of the source, byte for byte...
        let mirrored = dst
            .iter()
            .zip(src)
            .take_while(|(d, s)| d.as_bytes() == s.as_bytes())
            .count();
        // ...then the stop's MIRROR_PID_RESET (no transaction was open), then, on partition 0,
        // the batch produced after the failover.
        let rest = &dst[mirrored..];
        let reset = rest.first().unwrap_or_else(|| {
            panic!("partition {p}: no MIRROR_PID_RESET after {mirrored} mirrored batches")
        });
        assert!(reset.is_control(), "partition {p}: {reset:?}");
        let kind = reset.control_record().unwrap().map(|c| c.kind);
        assert_eq!(
            kind,
            Some(ControlRecordType::MirrorPidReset),
            "partition {p}"
        );
        let after: Vec<_> = rest[1..].iter().map(|b| b.base_offset()).collect();
        if p == 0 {
            assert_eq!(after, vec![Offset(written)], "partition 0 after the stop");
        } else {
            assert!(after.is_empty(), "partition {p}: {after:?}");
        }
    }
    let Setup { dest, mirror, .. } = s;
    drop(mirror); // the broker shuts its mirrors down; ours must let go of the manager
    dest.shutdown().unwrap();
}

#[test]
fn a_source_topic_deleted_and_recreated_fails_its_partitions_without_splicing_logs() {
    let s = setup();
    let producer = Producer::start(s.source.addr.clone());
    wait_for("a few hundred mirrored records", || {
        mirrored(&s.mirror) > 300
    });
    let _ = producer.finish();
    wait_for("the mirror to drain", || drained(&s));
    let copy = |p: i32| -> Vec<Bytes> {
        batches_of(&s.dest.broker.partition(TOPIC, p).unwrap())
            .iter()
            .map(|b| b.as_bytes().clone())
            .collect()
    };
    let before: Vec<_> = (0..PARTITIONS).map(copy).collect();

    // Same name, new topic id, offsets from 0 again, new data.
    let mut c = Client::connect(&s.source.addr).unwrap();
    c.delete_topic(TOPIC).unwrap();
    c.create_topic(TOPIC, PARTITIONS, &[]).unwrap();
    for n in 0..30 {
        c.produce(TOPIC, n % PARTITIONS, batch(5_000 + n as u64), -1, None)
            .unwrap();
    }
    wait_for("every partition to fail", || {
        s.mirror
            .describe()
            .iter()
            .all(|p| p.state == MirrorPartitionState::Failed)
    });
    for p in s.mirror.describe() {
        let why = p.failure.unwrap();
        assert!(
            why.contains("recreated") || why.contains("deleted"),
            "{}: {why}",
            p.partition
        );
    }
    // Nothing of the new topic reached the destination.
    let after: Vec<_> = (0..PARTITIONS).map(copy).collect();
    assert_eq!(after, before);
    let Setup { dest, mirror, .. } = s;
    drop(mirror);
    dest.shutdown().unwrap();
}
