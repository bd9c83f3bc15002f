//! `produce` and `consume`: a real Kafka client (librdkafka 2.12, through the `rdkafka` crate)
//! against `mirrorlog serve` and, in the same run, against each installed peer server
//! ([`crate::peers`]: Tansu, noida-db) under the same load (DESIGN.md §6).
//!
//! Every server gets one single-partition topic per variant, created through the client's admin
//! API (falling back on auto-creation), and the servers' rounds are interleaved
//! ([`interleave`]) so they all see the same machine conditions; figures are medians (times) or
//! percentiles (latencies) over the measured rounds, after one warm-up round each.
//!
//! - `produce`: 1 KiB incompressible records (no key, no compression, no idempotence), variants
//!   `acks=1` and `acks=all`. Each round has two phases, each with its own producer:
//!   - throughput: `records_per_round` records with at most [`BULK_IN_FLIGHT`] unacknowledged
//!     (a closed loop), `linger.ms` [`BULK_LINGER_MS`] (librdkafka's default). `mb_per_s` is
//!     payload bytes acknowledged per second; `saturated_p50_us`/`saturated_p99_us` are the
//!     per-record latencies of this phase, mostly queueing (Little's law: about
//!     in-flight ÷ throughput);
//!   - latency: an open loop at a fixed load, the same for every server — a burst of
//!     [`PACED_RECORDS_PER_MS`] records (16 KiB, the size of the `fdatasync` reference's write)
//!     at the start of every millisecond, `linger.ms` 0 — so `p50_us`/`p99_us` (per record, from
//!     `send` to the delivery callback) are the server's and the client's latency at a moderate
//!     load rather than a queue's.
//!
//!   Between the rounds a raw 16 KiB `pwrite` + `fdatasync` appending to a file beside
//!   mirrorlog's data dir is sampled: the `acks=all` lines carry `fdatasync_p50_us`,
//!   `fdatasync_p99_us` and `p99_vs_fdatasync_p99` (the target: ≤ 2).
//! - `consume`: the records (N MiB) are produced first (untimed), then each round a fresh
//!   consumer (assigned partition 0 from offset 0 — the log start of the fresh topic — with
//!   librdkafka's fetch defaults; its group is never joined) reads them all, checking offsets and
//!   sizes; the round ends at the last record. `mb_per_s` is payload bytes read per second,
//!   consumer start-up included. (Offset 0 rather than `OFFSET_BEGINNING`: librdkafka 2.12
//!   spends a fixed ~500 ms before its first ListOffsets, on every server alike.) The one
//!   setting off librdkafka's defaults, for every server: `receive.message.max.bytes` 1 GB,
//!   as noida-db answers a Fetch with the whole partition whatever its `max_bytes`.
//!
//! One line per (variant, peer): `baseline` names the peer, `ratio` is ours ÷ peer, and
//! `peer_storage` says where the peer keeps data: both peers keep records in memory only (Tansu
//! runs with `memory://` storage; noida-db snapshots some state to a JSON file, never
//! `fdatasync`ing), while mirrorlog writes every record to its log files and `fdatasync`s them
//! before answering `acks=all` (`ours_storage`). Not apples to apples: the peers have the easier
//! job. A peer that is not installed or fails is skipped, with its reason on stderr and in the
//! `skipped_peers` field; when no peer ran, one line per variant carries mirrorlog's figures
//! alone with `baseline: "none"` (its `baseline_mb_per_s` repeats ours, `ratio` 1). Lines are
//! told apart by (`scenario`, `variant`, `baseline`).
//!
//! All servers start before the first round and stay up, but only the one being measured runs:
//! every other peer process is frozen (`SIGSTOP`) during a round and during the raw-`fdatasync`
//! baseline, since an idle noida-db keeps a core busy and on a 2-core machine that alone made
//! acks=all p99 swing from 5 ms to 395 ms depending on which peers were in the run.
//!
//! mirrorlog runs in-process ([`RunningBroker::start_local`]) unless
//! `$MIRRORLOG_BENCH_BROKER_BIN` names a `mirrorlog` binary, which is then spawned as
//! `mirrorlog serve` (a separate process, as the peers are), with `--config
//! $MIRRORLOG_BENCH_BROKER_CONFIG` when that is set (e.g. a file saying `log.io.mode=direct`);
//! `ours_server` says which.

use crate::harness::{Opts, Report, interleave, median, percentile_us, round3, scratch_dir};
use crate::peers::{self, PeerKind, ServerProcess};
use anyhow::{Context as _, Result, anyhow, bail};
use mirrorlog_broker::running::RunningBroker;
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::{ClientContext, DefaultClientContext};
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::Message;
use rdkafka::producer::{BaseRecord, DeliveryResult, Producer, ProducerContext, ThreadedProducer};
use rdkafka::{Offset, TopicPartitionList};
use serde_json::{Value, json};
use std::cell::RefCell;
use std::fs::OpenOptions;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::process::Command;
use std::rc::Rc;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// Bytes of one record's value.
pub const RECORD_BYTES: usize = 1024;
/// Throughput phase: the most records the producer keeps unacknowledged (4 MiB).
pub const BULK_IN_FLIGHT: usize = 4096;
/// Throughput phase: `linger.ms` (librdkafka's default, set explicitly).
pub const BULK_LINGER_MS: u32 = 5;
/// Latency phase: records sent at the start of every millisecond (16 KiB/ms ≈ 16.4 MB/s).
pub const PACED_RECORDS_PER_MS: usize = 16;
/// Latency phase: `linger.ms` (send at once: the client adds no wait of its own).
pub const PACED_LINGER_MS: u32 = 0;
/// Latency phase: the offered load, MB/s.
const PACED_MB_PER_S: f64 = (PACED_RECORDS_PER_MS * RECORD_BYTES * 1000) as f64 / 1e6;
/// Bytes of one raw write in the `fdatasync` baseline.
const SYNC_WRITE_BYTES: usize = 16 * 1024;
/// Distinct random record values (cycled).
const VALUE_POOL: usize = 1024;
/// Consumers' `receive.message.max.bytes` (see [`consume_round`]).
const RECEIVE_MAX_BYTES: u32 = 1_000_000_000;
/// librdkafka's delivery timeout: a dead server fails a round within this.
const MESSAGE_TIMEOUT_MS: u32 = 30_000;

/// The client, for the reports.
const CLIENT: &str = "librdkafka 2.12 (rdkafka 0.39)";
const PRODUCE: &str = "produce";
const CONSUME: &str = "consume";
const CONSUME_VARIANT: &str = "from-beginning";
/// (variant, `acks`).
const PRODUCE_VARIANTS: &[(&str, &str)] = &[("acks=1", "1"), ("acks=all", "all")];
/// A comma-separated list of the `produce` variants to run (`acks=1`, `acks=all`), for measuring
/// one alone (the other's dirty pages then do not share the disk); unset: both.
const PRODUCE_ONLY_ENV: &str = "MIRRORLOG_BENCH_PRODUCE_ONLY";

/// The `produce` variants [`PRODUCE_ONLY_ENV`] selects.
fn produce_variants() -> Result<Vec<(&'static str, &'static str)>> {
    let Ok(only) = std::env::var(PRODUCE_ONLY_ENV) else {
        return Ok(PRODUCE_VARIANTS.to_vec());
    };
    let names: Vec<&str> = only.split(',').map(str::trim).collect();
    if let Some(bad) = names
        .iter()
        .find(|n| !PRODUCE_VARIANTS.iter().any(|(v, _)| v == *n))
    {
        bail!("{PRODUCE_ONLY_ENV}: no produce variant {bad:?} (acks=1, acks=all)");
    }
    Ok(PRODUCE_VARIANTS
        .iter()
        .copied()
        .filter(|(v, _)| names.contains(v))
        .collect())
}

/// Sizes of one run.
#[derive(Debug, Clone, Copy)]
struct Sizes {
    /// Records produced per produce round (per variant, per server).
    produce_records: usize,
    /// Records produced once and read per consume round.
    consume_records: usize,
    rounds: usize,
    /// `pwrite` + `fdatasync` samples per round.
    sync_samples: usize,
    /// Latency phase: milliseconds of paced sending per round.
    paced_ms: usize,
    /// How long one round may take before the server is declared failed.
    round_timeout: Duration,
}

impl Sizes {
    fn new(opts: Opts) -> Sizes {
        if opts.quick {
            Sizes {
                produce_records: 2 << 10,
                consume_records: 4 << 10,
                rounds: 2,
                sync_samples: 20,
                paced_ms: 200,
                round_timeout: Duration::from_secs(60),
            }
        } else {
            Sizes {
                produce_records: 64 << 10,
                consume_records: 256 << 10,
                rounds: 5,
                sync_samples: 200,
                paced_ms: 2000,
                round_timeout: Duration::from_secs(120),
            }
        }
    }
}

/// `produce` with the peers `$MIRRORLOG_BENCH_PEERS` selects (every installed one by default).
///
/// # Errors
/// mirrorlog failed (never because of a peer).
pub fn run_produce(opts: Opts) -> Result<Vec<Report>> {
    let (kinds, skipped) = peers::selected_from_env();
    produce_with(opts, &kinds, skipped)
}

/// `consume` with the peers `$MIRRORLOG_BENCH_PEERS` selects (every installed one by default).
///
/// # Errors
/// mirrorlog failed (never because of a peer).
pub fn run_consume(opts: Opts) -> Result<Vec<Report>> {
    let (kinds, skipped) = peers::selected_from_env();
    consume_with(opts, &kinds, skipped)
}

// ---------------------------------------------------------------------------------------------
// Servers

/// mirrorlog, in-process or as a child process.
enum OursServer {
    InProcess(RunningBroker),
    Process(ServerProcess),
}

impl OursServer {
    fn start(data_dir: &Path) -> Result<OursServer> {
        std::fs::create_dir_all(data_dir)?;
        match std::env::var_os("MIRRORLOG_BENCH_BROKER_BIN") {
            Some(bin) => {
                let port = peers::free_port()?;
                let mut cmd = Command::new(bin);
                cmd.arg("serve")
                    .arg("--data-dir")
                    .arg(data_dir)
                    .arg("--listen")
                    .arg(format!("127.0.0.1:{port}"));
                if let Some(config) = std::env::var_os("MIRRORLOG_BENCH_BROKER_CONFIG") {
                    cmd.arg("--config").arg(config);
                }
                let log = data_dir.with_extension("log");
                Ok(OursServer::Process(ServerProcess::spawn(
                    "mirrorlog",
                    cmd,
                    port,
                    &log,
                )?))
            }
            None => Ok(OursServer::InProcess(RunningBroker::start_local(
                data_dir, 1,
            )?)),
        }
    }

    fn bootstrap(&self) -> String {
        match self {
            OursServer::InProcess(b) => b.addr.to_string(),
            OursServer::Process(p) => p.bootstrap(),
        }
    }

    fn kind(&self) -> &'static str {
        match self {
            OursServer::InProcess(_) => "in-process",
            OursServer::Process(_) => "process",
        }
    }

    fn shutdown(self) -> Result<()> {
        match self {
            OursServer::InProcess(b) => b.shutdown(),
            OursServer::Process(p) => {
                drop(p);
                Ok(())
            }
        }
    }
}

/// One server under test: mirrorlog (`peer` None) or a peer.
struct Target {
    peer: Option<PeerKind>,
    bootstrap: String,
    /// The peer's process (None for mirrorlog, held apart so it can shut down cleanly).
    process: Option<ServerProcess>,
    /// Why it stopped being measured; for mirrorlog, the error the scenario fails with.
    failed: Rc<RefCell<Option<String>>>,
}

impl Target {
    fn name(&self) -> &'static str {
        self.peer.map_or("mirrorlog", PeerKind::name)
    }

    fn fail(&self, why: String) {
        let mut f = self.failed.borrow_mut();
        if f.is_none() {
            if let Some(p) = self.peer {
                eprintln!("peer {} failed, skipped from here on: {why}", p.name());
            }
            *f = Some(why);
        }
    }

    fn is_failed(&self) -> bool {
        self.failed.borrow().is_some()
    }
}

/// Starts mirrorlog and every peer of `kinds` that starts; the others are added to `skipped`.
fn start_servers(
    root: &Path,
    kinds: &[PeerKind],
    skipped: &mut Vec<(String, String)>,
) -> Result<(OursServer, Vec<Target>)> {
    let ours = OursServer::start(&root.join("mirrorlog")).context("starting mirrorlog")?;
    let mut targets = vec![Target {
        peer: None,
        bootstrap: ours.bootstrap(),
        process: None,
        failed: Rc::default(),
    }];
    for &k in kinds {
        match k.start(root) {
            Ok(p) => targets.push(Target {
                peer: Some(k),
                bootstrap: p.bootstrap(),
                process: Some(p),
                failed: Rc::default(),
            }),
            Err(e) => skipped.push((k.name().to_string(), format!("{e:#}"))),
        }
    }
    Ok((ours, targets))
}

/// Leaves only `which` of the peer processes running (none for `None`: a baseline round),
/// freezing the others, so an idle peer that spins a core cannot slow the one being measured.
/// mirrorlog itself is idle between its rounds and is not frozen.
fn run_only(targets: &[Target], which: Option<usize>) {
    for (i, t) in targets.iter().enumerate() {
        if let Some(p) = &t.process {
            p.set_frozen(Some(i) != which);
        }
    }
}

/// Lets every peer process run again.
fn thaw_all(targets: &[Target]) {
    for t in targets {
        if let Some(p) = &t.process {
            p.set_frozen(false);
        }
    }
}

/// Prints and collects why peers were skipped.
fn skipped_json(scenario: &str, skipped: &[(String, String)]) -> Option<Value> {
    for (name, why) in skipped {
        eprintln!("{scenario}: peer {name} skipped: {why}");
    }
    (!skipped.is_empty()).then(|| {
        Value::Object(
            skipped
                .iter()
                .map(|(n, w)| (n.clone(), Value::String(w.clone())))
                .collect(),
        )
    })
}

/// After the rounds: mirrorlog's failure is the scenario's; a failed peer is added to the
/// skipped ones (with the tail of its log). Returns, per target, whether it is still measured.
fn settle(targets: &[Target], skipped: &mut Vec<(String, String)>) -> Result<Vec<bool>> {
    if let Some(e) = targets[0].failed.borrow().clone() {
        bail!("mirrorlog: {e}");
    }
    Ok(targets
        .iter()
        .map(|t| match t.failed.borrow().clone() {
            Some(why) => {
                let log = t
                    .process
                    .as_ref()
                    .map(|p| format!(" (log: {})", p.log_tail(300)))
                    .unwrap_or_default();
                skipped.push((t.name().to_string(), format!("failed: {why}{log}")));
                false
            }
            None => true,
        })
        .collect())
}

// ---------------------------------------------------------------------------------------------
// Client plumbing

/// Runs a future to completion on this thread (the admin client's futures are resolved by its
/// own background thread; no async runtime needed).
fn block_on<F: std::future::Future>(f: F) -> F::Output {
    struct Unpark(std::thread::Thread);
    impl std::task::Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = std::task::Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = std::task::Context::from_waker(&waker);
    let mut f = std::pin::pin!(f);
    loop {
        if let std::task::Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
        std::thread::park_timeout(Duration::from_millis(100));
    }
}

fn base_config(bootstrap: &str) -> ClientConfig {
    let mut c = ClientConfig::new();
    c.set("bootstrap.servers", bootstrap)
        .set("client.id", "mirrorlog-bench")
        // Loopback only, one broker: don't spend time on address families.
        .set("broker.address.family", "v4");
    c
}

/// Creates a one-partition topic (an existing one is fine); when the server refuses CreateTopics,
/// relies on auto-creation. Then waits until its partition 0 has a leader.
fn create_topic(bootstrap: &str, topic: &str) -> Result<()> {
    let admin: AdminClient<DefaultClientContext> =
        base_config(bootstrap).create().context("admin client")?;
    let opts = AdminOptions::new()
        .request_timeout(Some(Duration::from_secs(10)))
        .operation_timeout(Some(Duration::from_secs(10)));
    let new = NewTopic::new(topic, 1, TopicReplication::Fixed(1));
    let created = block_on(admin.create_topics([&new], &opts));
    let note = match created {
        Ok(results) => match results.into_iter().next() {
            Some(Ok(_)) | None => None,
            Some(Err((_, RDKafkaErrorCode::TopicAlreadyExists))) => None,
            Some(Err((_, code))) => Some(format!("CreateTopics: {code}")),
        },
        Err(e) => Some(format!("CreateTopics: {e}")),
    };
    // Metadata through a producer (whose Metadata requests ask for auto-creation).
    let probe: rdkafka::producer::BaseProducer = base_config(bootstrap).create()?;
    let deadline = Instant::now() + Duration::from_secs(15);
    let mut last = String::new();
    while Instant::now() < deadline {
        match probe
            .client()
            .fetch_metadata(Some(topic), Duration::from_secs(5))
        {
            Ok(md) => {
                let ready = md.topics().iter().any(|t| {
                    t.name() == topic
                        && t.error().is_none()
                        && t.partitions()
                            .iter()
                            .any(|p| p.id() == 0 && p.leader() >= 0 && p.error().is_none())
                });
                if ready {
                    return Ok(());
                }
                last = format!("{topic} has no leader for partition 0 yet");
            }
            Err(e) => last = format!("metadata: {e}"),
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    bail!(
        "topic {topic} not ready: {last}{}",
        note.map(|n| format!(" ({n})")).unwrap_or_default()
    )
}

/// What the delivery callbacks of one producer saw in the current round.
#[derive(Default)]
struct Delivered {
    /// Callbacks so far (successes and failures).
    count: usize,
    failures: usize,
    first_error: Option<String>,
    latencies: Vec<Duration>,
}

/// The producer's context: records each delivery's latency and wakes the sender.
#[derive(Default)]
struct DeliveryContext {
    state: Mutex<Delivered>,
    wake: Condvar,
}

impl ClientContext for DeliveryContext {}

impl ProducerContext for DeliveryContext {
    type DeliveryOpaque = Box<Instant>;

    fn delivery(&self, result: &DeliveryResult<'_>, sent: Box<Instant>) {
        let latency = sent.elapsed();
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        s.count += 1;
        match result {
            Ok(_) => s.latencies.push(latency),
            Err((e, _)) => {
                s.failures += 1;
                if s.first_error.is_none() {
                    s.first_error = Some(e.to_string());
                }
            }
        }
        drop(s);
        self.wake.notify_all();
    }
}

/// One producer on one topic of one server.
struct ProduceClient {
    producer: ThreadedProducer<DeliveryContext>,
    topic: String,
}

impl ProduceClient {
    /// A producer with `acks` and `linger.ms`; every other setting is librdkafka's default,
    /// except no compression, no idempotence and a 30 s delivery timeout. The topic must exist.
    fn new(bootstrap: &str, topic: &str, acks: &str, linger_ms: u32) -> Result<ProduceClient> {
        let producer = base_config(bootstrap)
            .set("acks", acks)
            .set("linger.ms", linger_ms.to_string())
            .set("compression.type", "none")
            .set("enable.idempotence", "false")
            .set("message.timeout.ms", MESSAGE_TIMEOUT_MS.to_string())
            .create_with_context(DeliveryContext::default())
            .context("producer")?;
        Ok(ProduceClient {
            producer,
            topic: topic.to_string(),
        })
    }

    fn state(&self) -> std::sync::MutexGuard<'_, Delivered> {
        self.producer
            .context()
            .state
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    fn reset(&self, n: usize) {
        *self.state() = Delivered {
            latencies: Vec::with_capacity(n),
            ..Delivered::default()
        };
    }

    /// Waits until fewer than `limit` of the `sent` records are unacknowledged; fails on a
    /// delivery error or past `deadline`.
    fn wait_below(&self, sent: usize, limit: usize, deadline: Instant) -> Result<()> {
        let mut s = self.state();
        loop {
            if s.failures > 0 {
                bail!(
                    "{} of {sent} deliveries failed, first: {}",
                    s.failures,
                    s.first_error.as_deref().unwrap_or("?")
                );
            }
            if sent - s.count < limit {
                return Ok(());
            }
            let now = Instant::now();
            if now >= deadline {
                bail!("timed out: {} of {sent} records acknowledged", s.count);
            }
            s = self
                .producer
                .context()
                .wake
                .wait_timeout(s, (deadline - now).min(Duration::from_millis(500)))
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// Sends record number `i` (its value cycled from `values`), stamped with the time now.
    fn send(&self, values: &[u8], i: usize, deadline: Instant) -> Result<()> {
        let off = (i % (values.len() / RECORD_BYTES)) * RECORD_BYTES;
        let value = &values[off..off + RECORD_BYTES];
        let mut record = BaseRecord::<(), [u8], Box<Instant>>::with_opaque_to(
            &self.topic,
            Box::new(Instant::now()),
        )
        .partition(0)
        .payload(value);
        loop {
            match self.producer.send(record) {
                Ok(()) => return Ok(()),
                Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), r)) => {
                    record = r;
                    if Instant::now() >= deadline {
                        bail!("timed out with the producer's queue full");
                    }
                    std::thread::sleep(Duration::from_micros(200));
                }
                Err((e, _)) => bail!("send: {e}"),
            }
        }
    }

    /// The acknowledged records' latencies of this round.
    fn take_latencies(&self) -> Vec<Duration> {
        std::mem::take(&mut self.state().latencies)
    }

    /// Closed loop: sends `n` records keeping at most `in_flight` unacknowledged, waits for
    /// every delivery; returns the time taken and each record's latency.
    fn closed(
        &self,
        values: &[u8],
        n: usize,
        in_flight: usize,
        timeout: Duration,
    ) -> Result<(Duration, Vec<Duration>)> {
        self.reset(n);
        let start = Instant::now();
        let deadline = start + timeout;
        for i in 0..n {
            self.wait_below(i, in_flight, deadline)?;
            self.send(values, i, deadline)?;
        }
        self.wait_below(n, 1, deadline)?;
        Ok((start.elapsed(), self.take_latencies()))
    }

    /// Open loop at a fixed rate: `per_ms` records at the start of every millisecond for `ms`
    /// milliseconds (a late sender catches up), whatever the acknowledgements; then waits for
    /// every delivery and returns each record's latency.
    fn paced(
        &self,
        values: &[u8],
        per_ms: usize,
        ms: usize,
        timeout: Duration,
    ) -> Result<Vec<Duration>> {
        let n = per_ms * ms;
        self.reset(n);
        let start = Instant::now();
        let deadline = start + timeout;
        let mut sent = 0;
        for tick in 0..ms {
            let due = start + Duration::from_millis(tick as u64);
            let now = Instant::now();
            if due > now {
                std::thread::sleep(due - now);
            }
            while sent < (tick + 1) * per_ms {
                self.send(values, sent, deadline)?;
                sent += 1;
            }
            if tick % 64 == 0 {
                // Fail early on delivery errors (never waits: the limit is above `sent`).
                self.wait_below(sent, n + 1, deadline)?;
            }
        }
        self.wait_below(n, 1, deadline)?;
        Ok(self.take_latencies())
    }
}

/// `VALUE_POOL` distinct incompressible 1 KiB values (xorshift64*), back to back.
fn random_values() -> Vec<u8> {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut v = Vec::with_capacity(VALUE_POOL * RECORD_BYTES);
    while v.len() < VALUE_POOL * RECORD_BYTES {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        v.extend_from_slice(&x.wrapping_mul(0x2545_f491_4f6c_dd1d).to_le_bytes());
    }
    v
}

/// `samples` 16 KiB `pwrite` + `fdatasync` appends to a fresh file in `dir` (deleted after);
/// pushes each pair's latency.
fn fdatasync_round(dir: &Path, samples: usize, out: &mut Vec<Duration>) -> Result<Duration> {
    let path = dir.join("raw-fdatasync");
    let f = OpenOptions::new()
        .create(true)
        .truncate(true)
        .write(true)
        .open(&path)?;
    let buf: Vec<u8> = random_values()[..SYNC_WRITE_BYTES].to_vec();
    let start = Instant::now();
    for i in 0..samples {
        let t = Instant::now();
        f.write_all_at(&buf, (i * SYNC_WRITE_BYTES) as u64)?;
        f.sync_data()?;
        out.push(t.elapsed());
    }
    let took = start.elapsed();
    drop(f);
    std::fs::remove_file(&path)?;
    Ok(took)
}

// ---------------------------------------------------------------------------------------------
// produce

/// One (server, variant) of `produce`: its two producers (throughput phase, latency phase),
/// and what its measured rounds saw.
struct ProduceSlot {
    target: usize,
    variant: usize,
    clients: Option<(ProduceClient, ProduceClient)>,
    /// Throughput phase: round times and latencies.
    times: Vec<Duration>,
    bulk_latencies: Vec<Duration>,
    /// Latency phase.
    latencies: Vec<Duration>,
    warm: bool,
}

/// `produce` against mirrorlog and the peers `kinds`; `skipped` lists peers already left out
/// (with why).
///
/// # Errors
/// mirrorlog failed (never because of a peer).
pub fn produce_with(
    opts: Opts,
    kinds: &[PeerKind],
    mut skipped: Vec<(String, String)>,
) -> Result<Vec<Report>> {
    let sizes = Sizes::new(opts);
    let variants = produce_variants()?;
    let values = random_values();
    let bytes_per_round = (sizes.produce_records * RECORD_BYTES) as u64;
    // mirrorlog keeps every round's records, of both phases and both variants.
    let paced_bytes = (PACED_RECORDS_PER_MS * sizes.paced_ms * RECORD_BYTES) as u64;
    let need =
        (bytes_per_round + paced_bytes) * (sizes.rounds as u64 + 1) * variants.len() as u64 * 2;
    let scratch = scratch_dir(PRODUCE, need)?;
    let root = scratch.path();
    let (ours, targets) = start_servers(root, kinds, &mut skipped)?;
    if !opts.quick {
        eprintln!(
            "{PRODUCE}: {} records of {RECORD_BYTES} B per round, {} rounds, servers: {}",
            sizes.produce_records,
            sizes.rounds,
            targets
                .iter()
                .map(Target::name)
                .collect::<Vec<_>>()
                .join(", ")
        );
    }

    let mut slots = vec![];
    for (ti, t) in targets.iter().enumerate() {
        for (vi, (_, acks)) in variants.iter().enumerate() {
            let topic = format!("bench-produce-acks-{acks}");
            let clients = if t.is_failed() {
                None
            } else {
                let made = create_topic(&t.bootstrap, &topic).and_then(|()| {
                    Ok((
                        ProduceClient::new(&t.bootstrap, &topic, acks, BULK_LINGER_MS)?,
                        ProduceClient::new(&t.bootstrap, &topic, acks, PACED_LINGER_MS)?,
                    ))
                });
                made.map_err(|e| t.fail(format!("{e:#}"))).ok()
            };
            slots.push(ProduceSlot {
                target: ti,
                variant: vi,
                clients,
                times: vec![],
                bulk_latencies: vec![],
                latencies: vec![],
                warm: false,
            });
        }
    }

    let sync_dir = root.join("raw");
    std::fs::create_dir_all(&sync_dir)?;
    let mut sync_lat = vec![];
    let mut sync_warm = false;
    let mut sync_error = None;
    let mut sync_round = || {
        run_only(&targets, None);
        let mut lat = vec![];
        let r = fdatasync_round(&sync_dir, sizes.sync_samples, &mut lat);
        match r {
            Ok(d) => {
                if std::mem::replace(&mut sync_warm, true) {
                    sync_lat.extend(lat);
                }
                d
            }
            Err(e) => {
                sync_error.get_or_insert(e);
                Duration::ZERO
            }
        }
    };
    let mut rounds: Vec<Box<dyn FnMut() -> Duration + '_>> = vec![];
    for slot in slots.iter_mut() {
        let target = &targets[slot.target];
        let all_targets = &targets;
        let values = &values;
        let variants = &variants;
        rounds.push(Box::new(move || {
            run_only(all_targets, Some(slot.target));
            let Some((bulk, paced)) = slot.clients.as_ref().filter(|_| !target.is_failed()) else {
                return Duration::ZERO;
            };
            let round = bulk
                .closed(
                    values,
                    sizes.produce_records,
                    BULK_IN_FLIGHT,
                    sizes.round_timeout,
                )
                .and_then(|(d, bulk_lat)| {
                    let lat = paced.paced(
                        values,
                        PACED_RECORDS_PER_MS,
                        sizes.paced_ms,
                        sizes.round_timeout,
                    )?;
                    Ok((d, bulk_lat, lat))
                });
            match round {
                Ok((d, bulk_lat, lat)) => {
                    if std::mem::replace(&mut slot.warm, true) {
                        slot.times.push(d);
                        slot.bulk_latencies.extend(bulk_lat);
                        slot.latencies.extend(lat);
                    }
                    d
                }
                Err(e) => {
                    target.fail(format!("{} round: {e:#}", variants[slot.variant].0));
                    Duration::ZERO
                }
            }
        }));
    }
    let mut all: Vec<&mut dyn FnMut() -> Duration> = vec![&mut sync_round];
    for f in rounds.iter_mut() {
        all.push(f.as_mut());
    }
    interleave(sizes.rounds, &mut all);
    drop(all);
    drop(rounds);
    thaw_all(&targets);
    let peer_kinds: Vec<Option<PeerKind>> = targets.iter().map(|t| t.peer).collect();
    if let Some(e) = sync_error {
        return Err(e.context("raw pwrite + fdatasync"));
    }
    let sync_p50 = percentile_us(&sync_lat, 0.50);
    let sync_p99 = percentile_us(&sync_lat, 0.99);

    // Figures per slot, before the clients go.
    let fig: Vec<Option<Figures>> = slots.iter().map(ProduceSlot::figures).collect();
    drop(slots);
    let ok = settle(&targets, &mut skipped)?;
    drop(targets);
    let ours_kind = ours.kind();
    ours.shutdown().context("shutting mirrorlog down")?;

    let skipped_field = skipped_json(PRODUCE, &skipped);
    let mut reports = vec![];
    for (vi, &(variant, acks)) in variants.iter().enumerate() {
        let slot = |ti: usize| ti * variants.len() + vi;
        let o = fig[slot(0)]
            .as_ref()
            .ok_or_else(|| anyhow!("mirrorlog {variant}: no measured rounds"))?;
        let ours_storage = if acks == "all" {
            "files, fdatasync before the answer"
        } else {
            "files (page cache)"
        };
        let mut common: Vec<(&'static str, Value)> = vec![
            ("acks", json!(acks)),
            ("record_bytes", json!(RECORD_BYTES)),
            ("records_per_round", json!(sizes.produce_records)),
            ("rounds", json!(sizes.rounds)),
            ("partitions", json!(1)),
            ("in_flight_records", json!(BULK_IN_FLIGHT)),
            ("linger_ms", json!(BULK_LINGER_MS)),
            ("latency_load_mb_per_s", json!(round3(PACED_MB_PER_S))),
            ("latency_linger_ms", json!(PACED_LINGER_MS)),
            (
                "latency_records_per_round",
                json!(PACED_RECORDS_PER_MS * sizes.paced_ms),
            ),
            ("client", json!(CLIENT)),
            ("ours_server", json!(ours_kind)),
            ("ours_storage", json!(ours_storage)),
            ("p50_us", json!(o.p50)),
            ("p99_us", json!(o.p99)),
            ("saturated_p50_us", json!(o.bulk_p50)),
            ("saturated_p99_us", json!(o.bulk_p99)),
        ];
        if acks == "all" {
            common.push(("fdatasync_write_bytes", json!(SYNC_WRITE_BYTES)));
            common.push(("fdatasync_p50_us", json!(sync_p50)));
            common.push(("fdatasync_p99_us", json!(sync_p99)));
            common.push(("p99_vs_fdatasync_p99", json!(round3(o.p99 / sync_p99))));
        }
        if let Some(s) = &skipped_field {
            common.push(("skipped_peers", s.clone()));
        }
        let mut any_peer = false;
        for (ti, peer) in peer_kinds.iter().enumerate() {
            let (Some(peer), true) = (peer, ok[ti]) else {
                continue;
            };
            let Some(p) = fig[slot(ti)].as_ref() else {
                continue;
            };
            any_peer = true;
            let mut extra = common.clone();
            extra.push(("peer_storage", json!(peer.storage())));
            extra.push(("baseline_p50_us", json!(p.p50)));
            extra.push(("baseline_p99_us", json!(p.p99)));
            extra.push(("baseline_saturated_p50_us", json!(p.bulk_p50)));
            extra.push(("baseline_saturated_p99_us", json!(p.bulk_p99)));
            reports.push(Report {
                scenario: PRODUCE,
                variant: variant.to_string(),
                baseline: peer.name(),
                bytes: bytes_per_round,
                ours: o.median,
                base: p.median,
                extra,
            });
        }
        if !any_peer {
            reports.push(Report {
                scenario: PRODUCE,
                variant: variant.to_string(),
                baseline: "none",
                bytes: bytes_per_round,
                ours: o.median,
                base: o.median,
                extra: common,
            });
        }
    }
    drop(scratch);
    Ok(reports)
}

/// A server's figures for one variant.
struct Figures {
    /// Median throughput-phase round.
    median: Duration,
    /// Latency phase.
    p50: f64,
    p99: f64,
    /// Throughput phase.
    bulk_p50: f64,
    bulk_p99: f64,
}

impl ProduceSlot {
    fn figures(&self) -> Option<Figures> {
        (!self.times.is_empty() && !self.latencies.is_empty()).then(|| Figures {
            median: median(self.times.clone()),
            p50: percentile_us(&self.latencies, 0.50),
            p99: percentile_us(&self.latencies, 0.99),
            bulk_p50: percentile_us(&self.bulk_latencies, 0.50),
            bulk_p99: percentile_us(&self.bulk_latencies, 0.99),
        })
    }
}

// ---------------------------------------------------------------------------------------------
// consume

/// One server of `consume`: what its measured rounds took.
struct ConsumeSlot {
    target: usize,
    times: Vec<Duration>,
    warm: bool,
}

/// Reads `n` records of `topic` partition 0 from the beginning with a fresh consumer; checks
/// that offsets run 0, 1, … and that every value is [`RECORD_BYTES`] long. Returns the time from
/// creating the consumer to the last record.
fn consume_round(bootstrap: &str, topic: &str, n: usize, timeout: Duration) -> Result<Duration> {
    let start = Instant::now();
    // librdkafka's assign() needs a group id; the group itself is never joined or committed to.
    let consumer: BaseConsumer = base_config(bootstrap)
        .set("group.id", "mirrorlog-bench")
        // The client's cap on one response. noida-db ignores Fetch `max_bytes` and answers with
        // the whole partition, which past librdkafka's default 100 MB fails as "Bad message
        // format"; servers that honour `fetch.max.bytes` (50 MiB default) never come near it.
        .set("receive.message.max.bytes", RECEIVE_MAX_BYTES.to_string())
        .set("enable.auto.commit", "false")
        .set("enable.auto.offset.store", "false")
        .set("enable.partition.eof", "false")
        .create()
        .context("consumer")?;
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition_offset(topic, 0, Offset::Offset(0))?;
    consumer.assign(&tpl)?;
    let deadline = start + timeout;
    let mut next: i64 = 0;
    while (next as usize) < n {
        match consumer.poll(Duration::from_millis(100)) {
            Some(Ok(m)) => {
                if m.offset() != next {
                    bail!("expected offset {next}, got {}", m.offset());
                }
                let len = m.payload().map_or(0, <[u8]>::len);
                if len != RECORD_BYTES {
                    bail!("offset {next}: value of {len} bytes, expected {RECORD_BYTES}");
                }
                next += 1;
            }
            Some(Err(e)) => bail!("consume at offset {next}: {e}"),
            None => {}
        }
        if Instant::now() >= deadline {
            bail!("timed out after {timeout:?}: {next} of {n} records read");
        }
    }
    let took = start.elapsed();
    drop(consumer);
    Ok(took)
}

/// `consume` against mirrorlog and the peers `kinds`; `skipped` lists peers already left out
/// (with why).
///
/// # Errors
/// mirrorlog failed (never because of a peer).
pub fn consume_with(
    opts: Opts,
    kinds: &[PeerKind],
    mut skipped: Vec<(String, String)>,
) -> Result<Vec<Report>> {
    const TOPIC: &str = "bench-consume";
    let sizes = Sizes::new(opts);
    let n = sizes.consume_records;
    let values = random_values();
    let bytes = (n * RECORD_BYTES) as u64;
    let scratch = scratch_dir(CONSUME, 2 * bytes)?;
    let root = scratch.path();
    let (ours, targets) = start_servers(root, kinds, &mut skipped)?;
    if !opts.quick {
        eprintln!(
            "{CONSUME}: {n} records of {RECORD_BYTES} B ({} MiB) read per round, {} rounds, \
             servers: {}",
            bytes >> 20,
            sizes.rounds,
            targets
                .iter()
                .map(Target::name)
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    // Load every server first (untimed).
    for t in &targets {
        let loaded = create_topic(&t.bootstrap, TOPIC)
            .and_then(|()| ProduceClient::new(&t.bootstrap, TOPIC, "1", BULK_LINGER_MS))
            .and_then(|c| {
                c.closed(&values, n, BULK_IN_FLIGHT, sizes.round_timeout * 4)
                    .map(|_| ())
            });
        if let Err(e) = loaded {
            t.fail(format!("loading {n} records: {e:#}"));
        }
    }
    let mut slots: Vec<ConsumeSlot> = (0..targets.len())
        .map(|target| ConsumeSlot {
            target,
            times: vec![],
            warm: false,
        })
        .collect();
    let mut rounds: Vec<Box<dyn FnMut() -> Duration + '_>> = vec![];
    for slot in slots.iter_mut() {
        let target = &targets[slot.target];
        let all_targets = &targets;
        rounds.push(Box::new(move || {
            run_only(all_targets, Some(slot.target));
            if target.is_failed() {
                return Duration::ZERO;
            }
            match consume_round(&target.bootstrap, TOPIC, n, sizes.round_timeout) {
                Ok(d) => {
                    if std::mem::replace(&mut slot.warm, true) {
                        slot.times.push(d);
                    }
                    d
                }
                Err(e) => {
                    target.fail(format!("consume round: {e:#}"));
                    Duration::ZERO
                }
            }
        }));
    }
    let mut all: Vec<&mut dyn FnMut() -> Duration> =
        rounds.iter_mut().map(|f| f.as_mut() as _).collect();
    interleave(sizes.rounds, &mut all);
    drop(all);
    drop(rounds);
    thaw_all(&targets);
    let medians: Vec<Option<Duration>> = slots
        .iter()
        .map(|s| (!s.times.is_empty()).then(|| median(s.times.clone())))
        .collect();
    let peer_kinds: Vec<Option<PeerKind>> = targets.iter().map(|t| t.peer).collect();
    let ok = settle(&targets, &mut skipped)?;
    drop(targets);
    let ours_kind = ours.kind();
    ours.shutdown().context("shutting mirrorlog down")?;

    let o = medians[0].ok_or_else(|| anyhow!("mirrorlog: no measured rounds"))?;
    let skipped_field = skipped_json(CONSUME, &skipped);
    let mut common: Vec<(&'static str, Value)> = vec![
        ("record_bytes", json!(RECORD_BYTES)),
        ("records", json!(n)),
        ("rounds", json!(sizes.rounds)),
        ("partitions", json!(1)),
        ("client", json!(CLIENT)),
        ("ours_server", json!(ours_kind)),
    ];
    if let Some(s) = &skipped_field {
        common.push(("skipped_peers", s.clone()));
    }
    let mut reports = vec![];
    for (ti, peer) in peer_kinds.iter().enumerate() {
        let (Some(peer), true, Some(p)) = (peer, ok[ti], medians[ti]) else {
            continue;
        };
        let mut extra = common.clone();
        extra.push(("peer_storage", json!(peer.storage())));
        reports.push(Report {
            scenario: CONSUME,
            variant: CONSUME_VARIANT.to_string(),
            baseline: peer.name(),
            bytes,
            ours: o,
            base: p,
            extra,
        });
    }
    if reports.is_empty() {
        reports.push(Report {
            scenario: CONSUME,
            variant: CONSUME_VARIANT.to_string(),
            baseline: "none",
            bytes,
            ours: o,
            base: o,
            extra: common,
        });
    }
    drop(scratch);
    Ok(reports)
}
