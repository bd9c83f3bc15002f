//! Embedding mirrorlog's engine in a broker build: open a data directory, create a partition,
//! append as leader (durable on return) and as a mirror (the source's batches kept byte for
//! byte), read back, truncate, crash and recover.
//!
//! ```sh
//! cargo run -p mirrorlog-engine --example embed [DATA_DIR]
//! ```
//!
//! DATA_DIR defaults to a temporary directory; run again on the same one, the example opens
//! what the last run left and goes on from its logs' ends.

use bytes::Bytes;
use mirrorlog_engine::clock::SystemClock;
use mirrorlog_engine::config::LogConfig;
use mirrorlog_engine::log::{FetchIsolation, LeaderOrigin, ReplicaOrigin};
use mirrorlog_engine::manager::{LogManager, LogManagerConfig};
use mirrorlog_index::{LeaderEpoch, Offset, TimestampMs, TopicId, TopicPartition};
use mirrorlog_segment::io::default_storage;
use mirrorlog_segment::{BatchBuilder, Compression};
use std::path::Path;
use std::sync::Arc;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let tmp;
    let data_dir = match std::env::args().nth(1) {
        Some(d) => std::path::PathBuf::from(d),
        None => {
            tmp = tempfile::tempdir()?;
            tmp.path().to_path_buf()
        }
    };
    run(&data_dir)
}

/// The walk-through on `data_dir`: a new directory, or one an earlier run left.
pub fn run(data_dir: &Path) -> Result<(), Box<dyn std::error::Error>> {
    let now = || {
        TimestampMs(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_millis() as i64,
        )
    };

    // 1. Open the data directory (recovering anything a crash left behind).
    let storage = default_storage();
    println!("I/O backend: {}", storage.name());
    let (mgr, report) = LogManager::open(
        LogManagerConfig::new(data_dir),
        storage.clone(),
        Arc::new(SystemClock),
    )?;
    println!(
        "opened {} logs ({} recovered)",
        report.logs, report.unclean_logs
    );

    // 2. A topic partition and a read-only mirror partition.
    let orders = TopicPartition {
        topic: "orders".into(),
        partition: 0,
    };
    let mirrored = TopicPartition {
        topic: "mirrored".into(),
        partition: 0,
    };
    let h = mgr.create(&orders, TopicId([1; 16]), LogConfig::default())?;
    let m = mgr.create(
        &mirrored,
        TopicId([2; 16]),
        LogConfig {
            read_only: true,
            ..LogConfig::default()
        },
    )?;

    // 3. Leader appends: a producer's batch (base offset 0); offsets are assigned from the log
    //    end. "Returned Ok" from a durable append means the batch survives a crash.
    for i in 0..3 {
        let batch = BatchBuilder::new()
            .compression(Compression::Lz4)
            .record(
                now(),
                Some(format!("order-{i}").as_bytes()),
                Some(b"{\"qty\": 1}"),
            )
            .build();
        let info =
            h.append_as_leader_durable(batch.into_bytes(), LeaderEpoch(0), LeaderOrigin::Client)?;
        println!(
            "orders: appended offsets {}..={}",
            info.first_offset, info.last_offset
        );
    }
    let orders_end = h.read().log_end_offset();
    h.write().update_high_watermark(orders_end);

    // 4. Mirror appends: batches exactly as the source cluster wrote them (offsets, epochs,
    //    CRCs kept), from the mirror's log end (0 in a new directory, where an earlier run
    //    left it otherwise); clients may not write to a mirror partition.
    let mirror_start = m.read().log_end_offset().get();
    let source_batches: Bytes = {
        let mut v = Vec::new();
        for base in [mirror_start, mirror_start + 2, mirror_start + 5] {
            BatchBuilder::new()
                .base_offset(Offset(base))
                .partition_leader_epoch(LeaderEpoch(7))
                .record(now(), None, Some(b"from the source"))
                .record(now(), None, Some(b"and another"))
                .build_into(&mut v);
        }
        v.into()
    };
    let info = m.append_as_follower_durable(source_batches.clone(), ReplicaOrigin::Mirror)?;
    println!(
        "mirrored: {} batches, offsets {}..={}",
        info.batch_count, info.first_offset, info.last_offset
    );
    let refused = m.write().append_as_leader(
        BatchBuilder::new()
            .record(now(), None, Some(b"x"))
            .build()
            .into_bytes(),
        LeaderEpoch(0),
        LeaderOrigin::Client,
    );
    println!("client append to the mirror: {}", refused.unwrap_err());

    // 5. Read: a file slice (position, length) ready for sendfile.
    let log = m.read();
    let r = log.read(Offset(mirror_start), 1 << 20, FetchIsolation::LogEnd, false)?;
    let slice = r.records.expect("data");
    println!(
        "read {} bytes at position {} of {}",
        slice.slice.length,
        slice.slice.position,
        slice.slice.file.path().display()
    );
    assert_eq!(
        slice.slice.read_all()?,
        source_batches,
        "mirrored bytes are the source's bytes"
    );
    drop(log);

    // 6. Truncate (as a mirror does on divergence), then "crash" and recover.
    m.write().truncate_to(Offset(mirror_start + 2))?;
    println!(
        "mirrored truncated to log end {}",
        m.read().log_end_offset()
    );
    drop((h, m));
    drop(mgr); // no shutdown(): the next open recovers
    let (mgr, report) = LogManager::open(
        LogManagerConfig::new(data_dir),
        storage,
        Arc::new(SystemClock),
    )?;
    println!(
        "reopened {} logs, {} recovered after the crash",
        report.logs, report.unclean_logs
    );
    println!(
        "orders log end {}",
        mgr.get(&orders).expect("orders").read().log_end_offset()
    );
    mgr.shutdown()?;
    println!("clean shutdown");
    Ok(())
}
