//! OffsetDelete (API 47, what the Java AdminClient's `deleteConsumerGroupOffsets` sends), on the
//! group coordinator over a real engine: the asked partitions' offsets are tombstoned in
//! `__consumer_offsets` (gone after a reload too), a partition without an offset is answered
//! without error, an unknown group is GROUP_ID_NOT_FOUND and an empty id INVALID_GROUP_ID. (A
//! topic the group's members subscribe to answers GROUP_SUBSCRIBED_TO_TOPIC: see
//! `tests/java_admin_groups.rs`, where a real consumer holds the subscription.)

use crate::common;

use common::groups::{commit, delete, fetch, logs_with};
use kafka_protocol::ResponseError as E;
use mirrorlog_broker::group::{GroupConfig, GroupCoordinator};
use mirrorlog_engine::clock::ManualClock;

#[test]
fn offset_delete_tombstones_the_asked_offsets_of_a_group_without_members() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(1_700_000_000_000);
    let logs = logs_with(
        dir.path(),
        clock.clone(),
        &[("orders", 4, 1), ("payments", 1, 2)],
    );
    let c = GroupCoordinator::open(logs.clone(), GroupConfig::default(), clock.clone()).unwrap();
    commit(
        &c,
        "g",
        &[("orders", 0, 10), ("orders", 1, 11), ("payments", 0, 20)],
    );

    let (error, partitions) = delete(&c, "g", &[("orders", &[0, 3]), ("payments", &[0])]);
    assert_eq!(error, 0);
    assert_eq!(
        partitions,
        [
            ("orders".to_string(), 0, 0),
            ("orders".to_string(), 3, 0),
            ("payments".to_string(), 0, 0)
        ],
        "a partition without an offset is no error"
    );
    let asked = [("orders", 0), ("orders", 1), ("payments", 0)];
    assert_eq!(fetch(&c, "g", &asked), [-1, 11, -1]);

    assert_eq!(
        delete(&c, "nope", &[("orders", &[0])]).0,
        E::GroupIdNotFound.code()
    );
    assert_eq!(
        delete(&c, "", &[("orders", &[0])]).0,
        E::InvalidGroupId.code()
    );

    // The tombstones are in `__consumer_offsets`: a coordinator loading it again agrees.
    drop(c);
    let c = GroupCoordinator::open(logs, GroupConfig::default(), clock).unwrap();
    assert_eq!(fetch(&c, "g", &asked), [-1, 11, -1]);
}
