//! A start leaves its partitions in LOG_ALIGNMENT; the sync thread aligns them (MIRRORING) and
//! the fetcher pool loop starts their fetcher. Both loops used to look only every 50 ms, so a
//! new mirror's first byte waited up to two passes (50–110 ms of each bench catch-up round,
//! latency a failover drill or a new mirror sees). Now a start wakes the sync thread and a
//! partition reaching MIRRORING wakes the pool.
//!
//! Shown with the loops' pass interval at an hour: each topic is copied only if the wake-ups
//! happen. The second topic is started after the first one was copied, so after the sync
//! thread's first pass had aligned the first one: without the wake-ups it would wait for the
//! next pass, an hour away. The waits below are hang guards, never the verdict's measure.

use crate::common;

use common::{Dest, T0, log_bytes, manager, produce_to, within};
use mirrorlog_engine::config::LogConfig;
use mirrorlog_index::{Offset, TopicId, TopicPartition};
use mirrorlog_mirror::engine_source::EngineSource;
use mirrorlog_mirror::manager::{MirrorConfig, MirrorManager};
use mirrorlog_mirror::state::MirrorStateStore;
use std::sync::Arc;

#[test]
fn a_start_wakes_the_alignment_and_the_fetcher_pool() {
    let dirs = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (src, dst) = (manager(dirs.0.path()), manager(dirs.1.path()));
    let topics = ["first", "second"];
    for (i, t) in topics.iter().enumerate() {
        let k = TopicPartition {
            topic: (*t).into(),
            partition: 0,
        };
        src.create(&k, TopicId([i as u8 + 1; 16]), LogConfig::default())
            .unwrap();
        produce_to(&src, &k, t.as_bytes(), 3);
    }
    let mut config = MirrorConfig::new("m");
    config.pass_interval_ms = 3_600_000;
    let mirror = MirrorManager::new(
        config,
        EngineSource::new(src.clone(), "source-cluster", 1),
        dst.clone(),
        Arc::new(Dest(dst.clone())),
        Arc::new(MirrorStateStore::open(dst.clone(), 4).unwrap()),
        mirrorlog_engine::clock::ManualClock::new(T0),
    )
    .unwrap();
    mirror.run();
    let mut copied = vec![];
    for t in topics {
        let k = TopicPartition {
            topic: t.into(),
            partition: 0,
        };
        mirror.start_topics(&[t.to_string()]).unwrap();
        let end = || dst.get(&k).map(|h| h.read().log_end_offset());
        copied.push((t, within(60, || end() == Some(Offset(3)))));
        if !copied.last().unwrap().1 {
            break;
        }
        assert_eq!(
            log_bytes(&dst.get(&k).unwrap()),
            log_bytes(&src.get(&k).unwrap())
        );
    }
    // Also wakes both loops: with an hour between passes, a shutdown that only set the stop
    // flag would wait for it.
    mirror.shutdown();
    assert!(
        copied.iter().all(|(_, done)| *done),
        "copied within the hang guard (the passes being an hour apart): {copied:?}"
    );
}
