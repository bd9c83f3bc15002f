//! A real full disk: `mirrorlog serve` on a 12 MiB tmpfs. Produce (acks=all and acks=1) until
//! the file system is full: every further produce fails with `KAFKA_STORAGE_ERROR` (56) and the
//! broker stays up; then the file system is grown (`mount -o remount,size=…`: space returns) and
//! producing succeeds again at the next offset. After a SIGKILL and a restart every acknowledged
//! record is read back at its offset with its bytes, and nothing refused is there. Run for the
//! default buffered mode and for `log.io.mode=direct` (whose 64 MiB segment preallocation cannot
//! fit here at all: appends then allocate what they need, and no room is the same ENOSPC).
//!
//! Mounting needs root (CAP_SYS_ADMIN), which CI has; elsewhere set
//! `MIRRORLOG_SKIP_MOUNT_TESTS=1` to skip this test knowingly.

mod common;

use common::tmpfs::Tmpfs;
use common::{Serve, free_port};
use mirrorlog_broker::client::{Client, ClientError};
use mirrorlog_index::TimestampMs;
use mirrorlog_segment::BatchBuilder;
use rskafka::client::ClientBuilder;
use rskafka::client::partition::UnknownTopicHandling;

const KAFKA_STORAGE_ERROR: i16 = 56;
const RECORDS_PER_BATCH: usize = 16;

fn value(n: usize, i: usize) -> Vec<u8> {
    let mut v = format!("batch{n:06}-record{i:02}:").into_bytes();
    v.resize(1024, b'a' + (n % 26) as u8);
    v
}

fn batch(n: usize) -> bytes::Bytes {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let mut b = BatchBuilder::new();
    for i in 0..RECORDS_PER_BATCH {
        b.append(TimestampMs(now), None, Some(&value(n, i)), &[]);
    }
    b.build().into_bytes()
}

fn storage_error(r: Result<i64, ClientError>) -> bool {
    match r {
        Err(ClientError::Kafka { code, .. }) => {
            assert_eq!(code, KAFKA_STORAGE_ERROR, "a full disk is a storage error");
            true
        }
        Err(e) => panic!("expected KAFKA_STORAGE_ERROR, got {e}"),
        Ok(_) => false,
    }
}

#[test]
fn a_full_disk_refuses_produce_with_storage_error_and_recovers_when_space_returns() {
    fill_refuse_grow_recover(None);
}

#[test]
fn direct_mode_on_a_full_disk_refuses_produce_with_storage_error_and_recovers() {
    fill_refuse_grow_recover(Some("log.io.mode=direct\n"));
}

/// The scenario in the module docs, with `config` (a `server.properties` text) if given.
fn fill_refuse_grow_recover(config: Option<&str>) {
    let dir = tempfile::tempdir().unwrap();
    let Some(fs) = Tmpfs::mount(&dir.path().join("data"), "12m") else {
        return;
    };
    let config_path = dir.path().join("server.properties");
    let args: Vec<String> = match config {
        Some(text) => {
            std::fs::write(&config_path, text).unwrap();
            vec!["--config".into(), config_path.display().to_string()]
        }
        None => vec![],
    };
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let port = free_port();
    let mut broker = Serve::start_with(&fs.0, port, "warn", &args);
    let mut c = Client::connect(&broker.addr).unwrap();
    // Small segments, so that rolls (new log and index files) happen near the full mark too.
    c.create_topic("full", 1, &[("segment.bytes", "1048576")])
        .unwrap();

    // (batch number, base offset) of every acknowledged produce.
    let mut acked: Vec<(usize, i64)> = vec![];
    let mut n = 0;
    let mut refused = 0;
    while refused == 0 {
        assert!(n < 2_000, "12 MiB should fill long before 2000 x 17 KiB");
        let acks = if n % 2 == 0 { -1 } else { 1 };
        let r = c.produce("full", 0, batch(n), acks, None);
        if let Ok(base) = r {
            acked.push((n, base));
        }
        refused += usize::from(storage_error(r));
        n += 1;
    }
    // Full: more produces keep failing the same way, for both acks, and the broker stays up.
    for acks in [-1, 1, -1] {
        assert!(storage_error(c.produce("full", 0, batch(n), acks, None)));
        n += 1;
    }
    let before_space = acked.len();
    assert!(before_space > 100, "only {before_space} batches fitted");

    // Space returns: producing succeeds again, at the next offset.
    fs.grow("64m");
    for _ in 0..20 {
        let base = c.produce("full", 0, batch(n), -1, None).unwrap();
        let (_, last_base) = *acked.last().unwrap();
        assert_eq!(base, last_base + RECORDS_PER_BATCH as i64);
        acked.push((n, base));
        n += 1;
    }

    // Crash and recover; read everything back.
    broker.kill();
    let broker = Serve::start_with(&fs.0, port, "warn", &args);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let got = rt.block_on(async {
        let client = ClientBuilder::new(vec![broker.addr.clone()])
            .build()
            .await
            .unwrap();
        let pc = client
            .partition_client("full", 0, UnknownTopicHandling::Retry)
            .await
            .unwrap();
        let mut got = vec![];
        let mut at = 0;
        loop {
            let (recs, hw) = pc.fetch_records(at, 1..4_000_000, 1_000).await.unwrap();
            for r in recs {
                assert_eq!(r.offset, got.len() as i64, "offsets are contiguous");
                at = r.offset + 1;
                got.push(r.record.value.unwrap());
            }
            if at >= hw {
                break got;
            }
        }
    });
    assert_eq!(
        got.len(),
        acked.len() * RECORDS_PER_BATCH,
        "exactly the acknowledged records: {} acknowledged batches before the disk filled, 20 after",
        before_space
    );
    for (n, base) in &acked {
        for i in 0..RECORDS_PER_BATCH {
            assert_eq!(
                got[*base as usize + i],
                value(*n, i),
                "batch {n} record {i} at offset {}",
                base + i as i64
            );
        }
    }
    drop(broker);
}
