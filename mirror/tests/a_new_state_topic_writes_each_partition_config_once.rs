//! `MirrorStateStore::open` pins `__mirror_state`'s retention (`keep_every_record`). It created
//! each partition with `retention.ms`/`retention.bytes` −1 but not as the topic's own settings,
//! then pinned it: a second `topic.config` write, two syncs more, on each of its partitions at
//! a destination's first mirror creation (on a disk, each a flush before the mirror exists).
//! Now each partition is created pinned: opening the store on an empty destination syncs
//! exactly what creating its partitions does, and the topic still keeps every record.

use crate::common;

use common::sim_manager;
use mirrorlog_engine::config::LogConfig;
use mirrorlog_index::{TopicId, TopicPartition};
use mirrorlog_mirror::state::{MIRROR_STATE_TOPIC, MirrorStateStore};

#[test]
fn opening_the_state_store_syncs_only_the_creation_of_its_partitions() {
    let dir = tempfile::tempdir().unwrap();
    let (sim, logs) = sim_manager(dir.path());
    let n = 4;
    let before = sim.syncs_completed();
    for p in 0..n {
        let tp = TopicPartition {
            topic: "plain".into(),
            partition: p,
        };
        logs.create(&tp, TopicId([9; 16]), LogConfig::default())
            .unwrap();
    }
    let plain = sim.syncs_completed() - before;
    let before = sim.syncs_completed();
    let _store = MirrorStateStore::open(logs.clone(), n).unwrap();
    assert_eq!(sim.syncs_completed() - before, plain);
    for p in 0..n {
        let h = logs
            .get(&TopicPartition {
                topic: MIRROR_STATE_TOPIC.into(),
                partition: p,
            })
            .unwrap();
        let c = h.read().config().clone();
        assert_eq!((c.retention_ms, c.retention_bytes), (-1, -1));
        for k in ["retention.ms", "retention.bytes"] {
            assert!(c.overrides.contains(k), "partition {p}: {k} not its own");
        }
    }
}
