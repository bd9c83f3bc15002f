//! OffsetDelete of a partition whose data directory is offline (it went offline while the
//! broker started, so its log was never loaded) deletes the group's offset for it: Kafka's
//! `handleOffsetDeleteRequest` asks its metadata whether the partition exists, and the metadata
//! still lists a partition of an offline directory. Only a partition no data directory holds is
//! UNKNOWN_TOPIC_OR_PARTITION (`offset_delete_of_a_partition_the_broker_does_not_have.rs`).

use crate::common;

use common::groups::{close, commit, delete, fetch};
use common::two_dir_logs;
use mirrorlog_broker::group::{GroupConfig, GroupCoordinator, OFFSETS_TOPIC};
use mirrorlog_engine::clock::ManualClock;
use mirrorlog_engine::config::LogConfig;
use mirrorlog_index::{TopicId, TopicPartition};
use mirrorlog_segment::io::{Fault, FaultKind, IoOp, SimStorage};
use std::sync::Arc;

const T0: i64 = 1_700_000_000_000;

fn group_config() -> GroupConfig {
    GroupConfig {
        offsets_topic_partitions: 4,
        ..GroupConfig::default()
    }
}

#[test]
fn the_offset_of_a_partition_in_an_offline_dir_is_deleted() {
    let d1 = tempfile::tempdir().unwrap();
    let d2 = tempfile::tempdir().unwrap();
    let sim = Arc::new(SimStorage::new());
    let logs = two_dir_logs(d1.path(), d2.path(), &sim);
    let orders = TopicPartition {
        topic: "orders".into(),
        partition: 0,
    };
    let orders_dir = logs
        .create(&orders, TopicId([1; 16]), LogConfig::default())
        .unwrap()
        .data_dir()
        .to_path_buf();
    let coord = GroupCoordinator::open(logs.clone(), group_config(), ManualClock::new(T0)).unwrap();
    // A group whose offsets partition is in the other directory, which stays online.
    let group = (0..100)
        .map(|i| format!("g{i}"))
        .find(|g| {
            let tp = TopicPartition {
                topic: OFFSETS_TOPIC.into(),
                partition: coord.partition_for(g),
            };
            logs.get(&tp).unwrap().data_dir() != orders_dir
        })
        .expect("some group's offsets partition is in the other dir");
    commit(&coord, &group, &[("orders", 0, 42)]);
    close(logs, coord);

    // Listing orders-0 fails at the next start: its directory goes offline, its log unloaded.
    let bad = orders_dir.join(orders.to_string());
    sim.inject(Fault::new(IoOp::ListDir, FaultKind::Eio).on_path(bad.to_str().unwrap()));
    let logs = two_dir_logs(d1.path(), d2.path(), &sim);
    assert!(logs.lookup(&orders).is_err(), "orders-0 is offline");
    assert!(logs.get(&orders).is_none(), "orders-0 was not loaded");
    let coord = GroupCoordinator::open(logs.clone(), group_config(), ManualClock::new(T0)).unwrap();
    assert_eq!(fetch(&coord, &group, &[("orders", 0)]), [42]);

    assert_eq!(
        delete(&coord, &group, &[("orders", &[0])]),
        (0, vec![("orders".to_string(), 0, 0)])
    );
    assert_eq!(fetch(&coord, &group, &[("orders", 0)]), [-1]);
    close(logs, coord);
}
