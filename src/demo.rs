//! `mirrorlog demo`: KIP-1279 cluster mirroring between two brokers on this machine, end to end.
//!
//! Starts a source and a destination broker in-process on free loopback ports with temporary
//! data dirs; produces plain, compressed and transactional data to the source over the Kafka
//! protocol, and commits a consumer group's offsets there; creates a mirror on the destination
//! (fetching over the Kafka protocol like any client) and shows the lag reaching zero while the
//! producer keeps writing; fails over (the source's producers stop, the mirror catches up, the
//! mirror topic is stopped: open transactions aborted, MIRROR_PID_RESET written, topic
//! writable); syncs the group's offsets with the double clamp; then verifies that every source
//! batch is on the destination byte for byte at the same offset, that READ_COMMITTED skips the
//! aborted transaction, that the group resumes inside the destination log, and that the
//! destination now takes writes. Ends with a short report.

use anyhow::{Context, Result, bail, ensure};
use bytes::Bytes;
use mirrorlog_broker::client::Client;
use mirrorlog_broker::running::RunningBroker;
use mirrorlog_broker::source_client::{KafkaSource, KafkaSourceConfig};
use mirrorlog_engine::log::FetchIsolation;
use mirrorlog_index::{
    LeaderEpoch, Offset, ProducerEpoch, ProducerId, Sequence, TimestampMs, TopicPartition,
};
use mirrorlog_mirror::group_sync::{GroupOffsetsSink, sync_group_offsets};
use mirrorlog_mirror::manager::MirrorConfig;
use mirrorlog_mirror::source::SourceCluster;
use mirrorlog_segment::{BatchBuilder, Compression};
use parking_lot::Mutex;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

const TOPIC: &str = "orders";
const PARTITIONS: i32 = 3;
const GROUP: &str = "billing";
/// The codecs step 3 writes, each in its own batches; its title names them.
const CODECS: [Compression; 5] = [
    Compression::None,
    Compression::Lz4,
    Compression::Zstd,
    Compression::Snappy,
    Compression::Gzip,
];

/// Step 3's title: the codecs written ("plain" for none), then the transactions.
fn produce_step_title() -> String {
    let names: Vec<&str> = CODECS
        .iter()
        .map(|c| match c {
            Compression::None => "plain",
            c => c.name(),
        })
        .collect();
    let (last, rest) = names.split_last().expect("codecs");
    format!(
        "producing {} and {last} data and two transactions to the source; group \"{GROUP}\" commits",
        rest.join(", ")
    )
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

fn batch(records: usize, codec: Compression, tag: &str, n: u64) -> Bytes {
    let mut b = BatchBuilder::new().compression(codec);
    for i in 0..records {
        let value = format!(
            "{{\"order\":{n},\"item\":{i},\"tag\":\"{tag}\",\"pad\":\"{}\"}}",
            "x".repeat(200)
        );
        b.append(
            TimestampMs(now_ms()),
            Some(format!("customer-{}", (n + i as u64) % 97).as_bytes()),
            Some(value.as_bytes()),
            &[],
        );
    }
    b.build().into_bytes()
}

fn step(n: u32, what: &str) {
    println!("[{n}/7] {what}");
}

/// Offsets go to the destination broker over the Kafka protocol.
struct WireSink(Mutex<Client>);

impl GroupOffsetsSink for WireSink {
    fn is_group_active(&self, _group: &str) -> bool {
        // The demo's group has no members on the destination until it fails over.
        false
    }
    fn has_consumer_group(&self, _group: &str) -> bool {
        // The demo's source has no share groups, so there is nothing to collide with.
        false
    }
    fn commit(
        &self,
        group: &str,
        tp: &TopicPartition,
        offset: Offset,
        epoch: LeaderEpoch,
        // The demo's consumer commits none.
        _metadata: &str,
    ) -> Result<(), String> {
        self.0
            .lock()
            .commit_offsets(
                group,
                &tp.topic,
                &[(tp.partition, offset.get(), epoch.get())],
            )
            .map_err(|e| e.to_string())
    }
}

fn partition_bytes(b: &RunningBroker, p: i32, end: Offset) -> Result<Bytes> {
    let h = b.broker.partition(TOPIC, p).context("partition")?;
    let log = h.read();
    let mut out = Vec::new();
    let mut at = log.log_start_offset();
    while at < end {
        let r = log.read(at, 1 << 20, FetchIsolation::LogEnd, true)?;
        let Some(d) = r.records else { break };
        let bytes = d.slice.read_all()?;
        for batch in mirrorlog_segment::batch::Batches::new(bytes) {
            let batch = batch?;
            if batch.base_offset() >= end {
                return Ok(out.into());
            }
            out.extend_from_slice(batch.as_bytes());
            at = batch.next_offset();
        }
    }
    Ok(out.into())
}

/// Runs the demo.
pub fn run() -> Result<()> {
    let started = Instant::now();
    let dirs = (tempfile::tempdir()?, tempfile::tempdir()?);
    println!("mirrorlog demo — KIP-1279 cluster mirroring between two local brokers\n");

    step(1, "starting the source broker");
    let source = RunningBroker::start_local(dirs.0.path(), 1)?;
    println!(
        "      source      {}  (data dir {})",
        source.addr,
        dirs.0.path().display()
    );
    step(2, "starting the destination broker");
    let dest = RunningBroker::start_local(dirs.1.path(), 2)?;
    println!(
        "      destination {}  (data dir {})",
        dest.addr,
        dirs.1.path().display()
    );

    step(3, &produce_step_title());
    let src_addr = source.addr.to_string();
    let mut c = Client::connect(&src_addr)?;
    c.create_topic(TOPIC, PARTITIONS, &[("retention.ms", "-1")])?;
    let mut produced_bytes = 0u64;
    let mut n = 0u64;
    for codec in CODECS {
        for p in 0..PARTITIONS {
            for _ in 0..20 {
                let b = batch(20, codec, codec.name(), n);
                produced_bytes += b.len() as u64;
                c.produce(TOPIC, p, b, -1, None)?;
                n += 20;
            }
        }
    }
    // A committed and an aborted transaction over all partitions.
    let txn = "demo-txn";
    let (pid, epoch) = c.init_producer_id(Some(txn))?;
    let mut seq = [0i32; PARTITIONS as usize];
    for commit in [true, false] {
        c.add_partitions_to_txn(txn, pid, epoch, TOPIC, &(0..PARTITIONS).collect::<Vec<_>>())?;
        for p in 0..PARTITIONS {
            let tag = if commit {
                "committed-txn"
            } else {
                "aborted-txn"
            };
            let mut b = BatchBuilder::new()
                .producer(
                    ProducerId(pid),
                    ProducerEpoch(epoch),
                    Sequence(seq[p as usize]),
                )
                .transactional(true);
            for i in 0..5 {
                b.append(
                    TimestampMs(now_ms()),
                    None,
                    Some(format!("{tag}-{i}").as_bytes()),
                    &[],
                );
            }
            seq[p as usize] += 5;
            c.produce(TOPIC, p, b.build().into_bytes(), -1, Some(txn))?;
        }
        c.end_txn(txn, pid, epoch, commit)?;
    }
    c.commit_offsets(GROUP, TOPIC, &[(0, 150, -1), (1, 200, -1), (2, 250, -1)])?;
    println!(
        "      {n} records ({:.1} MB) in {} codecs, 2 transactions (1 committed, 1 aborted)",
        produced_bytes as f64 / 1e6,
        CODECS.len()
    );

    step(
        4,
        "creating mirror \"demo\" on the destination and mirroring topic \"orders\"",
    );
    let kafka_source = KafkaSource::new(KafkaSourceConfig::new(vec![src_addr.clone()]))?;
    let source_dyn: Arc<dyn SourceCluster> = kafka_source.clone();
    let mut cfg = MirrorConfig::new("demo");
    cfg.max_wait_ms = 100;
    cfg.metadata_refresh_interval_ms = 1000;
    let mirror = dest
        .broker
        .mirrors
        .create(&dest.broker, cfg, source_dyn.clone())?;
    let mirror_started = Instant::now();
    mirror.start_topics(&[TOPIC.to_string()])?;

    // Keep producing while the mirror catches up: the demo fails over mid-stream.
    let stop_producing = Arc::new(AtomicBool::new(false));
    let live_records = Arc::new(AtomicU64::new(0));
    let producer = {
        let (stop, count, addr) = (
            stop_producing.clone(),
            live_records.clone(),
            src_addr.clone(),
        );
        std::thread::spawn(move || -> Result<()> {
            let mut c = Client::connect(&addr)?;
            let mut i = 0u64;
            while !stop.load(Ordering::Relaxed) {
                c.produce(
                    TOPIC,
                    (i % PARTITIONS as u64) as i32,
                    batch(10, Compression::Lz4, "live", i),
                    1,
                    None,
                )?;
                count.fetch_add(10, Ordering::Relaxed);
                i += 1;
                std::thread::sleep(Duration::from_millis(5));
            }
            Ok(())
        })
    };
    // Lag as an operator would compute it: the source's high watermark minus the destination's
    // log end, summed over partitions (both brokers are in this process). Both are offsets, so
    // the lag counts transaction markers too, not only records.
    let source_lag = |st: &[mirrorlog_mirror::manager::PartitionStatus]| -> i64 {
        st.iter()
            .map(|s| {
                let hw = source
                    .broker
                    .partition(TOPIC, s.partition)
                    .map_or(0, |h| h.read().high_watermark().get());
                (hw - s.log_end_offset.get()).max(0)
            })
            .sum()
    };
    let mut max_lag = 0i64;
    let mut caught_up_at = None;
    let deadline = Instant::now() + Duration::from_secs(120);
    while Instant::now() < deadline {
        let st = mirror.describe();
        let lag = source_lag(&st);
        let mirrored: i64 = st.iter().map(|s| s.log_end_offset.get()).sum();
        max_lag = max_lag.max(lag);
        let failed: Vec<_> = st.iter().filter_map(|s| s.failure.clone()).collect();
        if !failed.is_empty() {
            bail!("mirror partitions failed: {failed:?}");
        }
        println!(
            "      {:>5.1}s  state {:<10} log end {:>7}  lag {:>6} offsets",
            mirror_started.elapsed().as_secs_f64(),
            st.first().map_or("-", |s| s.state.name()),
            mirrored,
            lag
        );
        if lag <= 10 * PARTITIONS as i64
            && mirrored > 0
            && st.iter().all(|s| s.source_high_watermark.get() >= 0)
        {
            caught_up_at.get_or_insert(mirror_started.elapsed());
            if mirror_started.elapsed() > Duration::from_secs(2) {
                break;
            }
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    let caught_up = caught_up_at.context("the mirror did not catch up within 2 minutes")?;

    step(
        5,
        "failing over mid-stream: a transaction is left open, producers stop, the mirror drains",
    );
    let (pid2, epoch2) = c.init_producer_id(Some("open-at-failover"))?;
    c.add_partitions_to_txn("open-at-failover", pid2, epoch2, TOPIC, &[0])?;
    let open = BatchBuilder::new()
        .producer(ProducerId(pid2), ProducerEpoch(epoch2), Sequence(0))
        .transactional(true)
        .record(TimestampMs(now_ms()), None, Some(b"never-committed"))
        .build();
    c.produce(TOPIC, 0, open.into_bytes(), -1, Some("open-at-failover"))?;
    stop_producing.store(true, Ordering::Relaxed);
    producer
        .join()
        .map_err(|_| anyhow::anyhow!("producer thread panicked"))??;
    let src_ends: Vec<Offset> = (0..PARTITIONS)
        .map(|p| {
            source
                .broker
                .partition(TOPIC, p)
                .map(|h| h.read().log_end_offset())
                .context("partition")
        })
        .collect::<Result<_>>()?;
    let drain_deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let st = mirror.describe();
        if st
            .iter()
            .all(|s| s.log_end_offset >= src_ends[s.partition as usize])
        {
            break;
        }
        ensure!(
            Instant::now() < drain_deadline,
            "the mirror did not drain: {st:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let failover_started = Instant::now();
    mirror.stop_topic(TOPIC)?;
    let failover_ms = failover_started.elapsed().as_millis();
    let sink = WireSink(Mutex::new(Client::connect(&dest.addr.to_string())?));
    let sync = sync_group_offsets(
        source_dyn.as_ref(),
        &dest.broker.logs,
        &sink,
        &[GROUP.to_string()],
    )?;
    println!(
        "      stopped in {failover_ms} ms: open transactions aborted, MIRROR_PID_RESET written, topic writable"
    );
    println!(
        "      group \"{GROUP}\": {} offsets synced ({} clamped)",
        sync.committed, sync.clamped
    );

    step(6, "verifying the destination against the source");
    let mut verified_bytes = 0usize;
    for p in 0..PARTITIONS {
        let end = src_ends[p as usize];
        let s = partition_bytes(&source, p, end)?;
        let d = partition_bytes(&dest, p, end)?;
        ensure!(
            s == d,
            "partition {p}: destination bytes differ from the source's below offset {end}"
        );
        verified_bytes += s.len();
    }
    println!(
        "      every batch of {PARTITIONS} partitions identical at identical offsets ({:.1} MB)",
        verified_bytes as f64 / 1e6
    );
    for p in 0..PARTITIONS {
        let h = dest.broker.partition(TOPIC, p).context("partition")?;
        let log = h.read();
        ensure!(
            log.last_stable_offset() == log.log_end_offset(),
            "partition {p}: a transaction is still open"
        );
        ensure!(
            log.producer_state().producer_count() == 0,
            "partition {p}: mirrored producers survived the reset"
        );
        let aborted = log.collect_aborted_txns(Offset(0), log.log_end_offset())?;
        ensure!(
            aborted.iter().any(|a| a.producer_id == ProducerId(pid)),
            "partition {p}: the aborted transaction is missing from the index"
        );
        ensure!(
            p != 0 || aborted.iter().any(|a| a.producer_id == ProducerId(pid2)),
            "partition {p}: the transaction open at failover was not aborted"
        );
    }
    println!("      READ_COMMITTED: the aborted and the open-at-failover transactions are skipped");
    let mut dc = Client::connect(&dest.addr.to_string())?;
    let offsets = dc.fetch_offsets(GROUP, TOPIC, &(0..PARTITIONS).collect::<Vec<_>>())?;
    for (p, o) in &offsets {
        let hw = dest
            .broker
            .partition(TOPIC, *p)
            .context("partition")?
            .read()
            .high_watermark();
        ensure!(
            *o >= 0 && *o <= hw.get(),
            "group offset {o} of partition {p} is outside the destination log (HW {hw})"
        );
    }
    println!("      group \"{GROUP}\" resumes at {offsets:?} on the destination (inside its log)");
    let after = dc.produce(
        TOPIC,
        0,
        batch(5, Compression::Zstd, "after-failover", 0),
        -1,
        None,
    )?;
    println!("      the destination takes writes now (offset {after})");

    step(7, "report");
    let mirrored_bytes: u64 = (0..PARTITIONS)
        .map(|p| {
            dest.broker
                .partition(TOPIC, p)
                .map_or(0, |h| h.read().size_bytes())
        })
        .sum();
    let live = live_records.load(Ordering::Relaxed);
    println!(
        "      records produced           {} (+{live} live during mirroring)",
        // The two transactions (5 records per partition each) and the one open at failover.
        n + 2 * 5 * PARTITIONS as u64 + 1
    );
    println!(
        "      bytes on the destination   {:.1} MB",
        mirrored_bytes as f64 / 1e6
    );
    println!(
        "      initial catch-up           ≤ {:.2} s (≥ {:.1} MB/s)",
        caught_up.as_secs_f64(),
        produced_bytes as f64 / 1e6 / caught_up.as_secs_f64().max(1e-3)
    );
    println!("      max lag observed           {max_lag} offsets (records and markers)");
    println!("      failover (stop) time       {failover_ms} ms");
    println!("      records lost or changed    0 (verified byte for byte)");
    println!(
        "      total                      {:.1} s",
        started.elapsed().as_secs_f64()
    );
    drop((dc, sink, c, mirror, source_dyn, kafka_source));
    dest.shutdown().context("destination shutdown")?;
    source.shutdown().context("source shutdown")?;
    Ok(())
}
