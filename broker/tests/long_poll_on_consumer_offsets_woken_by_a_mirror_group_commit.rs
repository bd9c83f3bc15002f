//! A mirror syncs its source's group offsets into the destination's group coordinator, which
//! appends them to the group's `__consumer_offsets` partition. That append, made by the mirror
//! rather than by a client request, woke no long poll: a tool long-polling the destination's
//! offsets partition waited out its `max_wait_ms`. The wait below is bounded only to fail a
//! hung test; what ends it is the long poll's answer.

use crate::common;

use common::internal_topics::{answered_bytes, park_long_poll, partition_for};
use common::long_poll::{HANG_GUARD, mirrored_events};
use mirrorlog_broker::group::{GroupConfig, OFFSETS_TOPIC};

#[test]
fn a_mirrored_group_commit_wakes_the_long_poll_on_its_offsets_partition() {
    let dir = tempfile::tempdir().unwrap();
    let (src, mut sc, dst) = mirrored_events(dir.path());
    let g = "mirrored-group";
    let p = partition_for(g, GroupConfig::default().offsets_topic_partitions);
    let rx = park_long_poll(&dst.broker, OFFSETS_TOPIC, p);
    // A consumer of the source commits; the mirror's next group sync commits it on the
    // destination.
    sc.commit_offsets(g, "events", &[(0, 1, -1)]).unwrap();
    let resp = rx.recv_timeout(HANG_GUARD);
    // Ends the long poll before asserting, so that a failure does not leave it waiting.
    dst.broker.appends.close();
    let resp = resp.expect("the mirror's group commit did not wake the long poll");
    assert!(answered_bytes(&resp) > 0, "{resp:?}");
    dst.shutdown().unwrap();
    src.shutdown().unwrap();
}
