//! A mirror that fetches below the source's log start truncates its partition fully and starts
//! again there (KIP-1279 §8). That truncation appends nothing, so it did not tell the
//! destination (`DestinationTopics::appended`): a consumer long-polling past the new log start
//! kept waiting for its max wait instead of seeing OFFSET_OUT_OF_RANGE at once. The mirror now
//! names the partition it truncated, as it names those it appends to.

use crate::common;

use common::{Dest, T0, manager};
use mirrorlog_engine::clock::ManualClock;
use mirrorlog_engine::config::LogConfig;
use mirrorlog_engine::manager::LogManager;
use mirrorlog_index::{Offset, TopicId, TopicPartition};
use mirrorlog_mirror::engine_source::EngineSource;
use mirrorlog_mirror::manager::{DestinationTopics, MirrorConfig, MirrorManager};
use mirrorlog_mirror::state::MirrorStateStore;
use parking_lot::Mutex;
use std::sync::Arc;

/// The test destination, recording each partition named to `appended` with its log start and
/// end at that moment.
#[derive(Debug)]
struct Recording {
    dest: Dest,
    calls: Mutex<Vec<(TopicPartition, Offset, Offset)>>,
}

impl DestinationTopics for Recording {
    fn ensure_mirror_topic(&self, name: &str, id: [u8; 16], partitions: i32) -> Result<(), String> {
        self.dest.ensure_mirror_topic(name, id, partitions)
    }
    fn topic_name_for_id(&self, id: [u8; 16]) -> Option<String> {
        self.dest.topic_name_for_id(id)
    }
    fn apply_topic_configs(
        &self,
        name: &str,
        configs: &[(String, String)],
        removed: &[String],
    ) -> Result<(), String> {
        self.dest.apply_topic_configs(name, configs, removed)
    }
    fn set_read_only(&self, name: &str, read_only: bool) -> Result<(), String> {
        self.dest.set_read_only(name, read_only)
    }
    fn appended(&self, partitions: &[TopicPartition]) {
        for tp in partitions {
            let h = self.dest.0.get(tp).expect("a mirrored partition");
            let log = h.read();
            self.calls
                .lock()
                .push((tp.clone(), log.log_start_offset(), log.log_end_offset()));
        }
    }
}

fn tp() -> TopicPartition {
    TopicPartition {
        topic: "orders".into(),
        partition: 0,
    }
}

fn produce(m: &LogManager, n: usize) {
    common::produce_to(m, &tp(), b"v", n);
}

#[test]
fn restarting_at_the_source_log_start_names_the_truncated_partition() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let src = manager(a.path());
    let dst = manager(b.path());
    src.create(&tp(), TopicId([1; 16]), LogConfig::default())
        .unwrap();
    for _ in 0..4 {
        produce(&src, 5);
    }
    src.get(&tp())
        .unwrap()
        .write()
        .maybe_increment_log_start_offset(Offset(12))
        .unwrap();
    let topics = Arc::new(Recording {
        dest: Dest(dst.clone()),
        calls: Mutex::new(Vec::new()),
    });
    let mirror = MirrorManager::new(
        MirrorConfig::new("m"),
        EngineSource::new(src.clone(), "source-cluster", 1),
        dst.clone(),
        topics.clone(),
        Arc::new(MirrorStateStore::open(dst.clone(), 4).unwrap()),
        ManualClock::new(T0),
    )
    .unwrap();
    mirror.start_topics(&["orders".to_string()]).unwrap();
    common::catch_up(&mirror);
    let d = dst.get(&tp()).unwrap();
    assert_eq!(d.read().log_start_offset(), Offset(12));
    assert_eq!(d.read().log_end_offset(), Offset(20));
    let calls = topics.calls.lock().clone();
    // The truncation (log start and end 12, nothing appended yet) was named, then the append.
    assert!(
        calls.contains(&(tp(), Offset(12), Offset(12))),
        "the truncation to the source's log start woke no long poll: {calls:?}"
    );
    // Nothing else: the start's log alignment changed nothing and named nothing.
    assert_eq!(
        calls,
        vec![
            (tp(), Offset(12), Offset(12)),
            (tp(), Offset(12), Offset(20))
        ]
    );
    mirror.shutdown();
}
