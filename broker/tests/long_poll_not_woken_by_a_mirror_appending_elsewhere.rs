//! Kafka's `DelayedFetch` purgatory is keyed by partition: a follower's (here a mirror's)
//! append completes only the delayed fetches of the partitions it appended to. Here every
//! mirror append woke every long-polling fetch of the broker, which re-read all its partitions
//! and slept again. Wake-ups are counted through the notifier's test hook.

use crate::common;

use common::long_poll::*;

#[test]
fn a_long_poll_is_not_woken_by_a_mirror_appending_to_another_topic() {
    let dir = tempfile::tempdir().unwrap();
    let (src, mut sc, dst) = mirrored_events(dir.path());
    let woken = wakeups_of_an_unconcerned_long_poll(&dst, |b| {
        // One record at a time, each mirrored before the next is produced: the mirror applies
        // them in separate answers, and the one before the last has signalled by the time the
        // last is in the log.
        for end in 2..=6 {
            sc.produce("events", 0, one_record(), 1, None).unwrap();
            wait_log_end(b, "events", end);
        }
    });
    assert_eq!(
        woken, 0,
        "the mirror's appends to events woke the long poll on a"
    );
    dst.shutdown().unwrap();
    src.shutdown().unwrap();
}
