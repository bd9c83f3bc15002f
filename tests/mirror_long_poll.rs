//! Scenario: a consumer long-polling a mirror topic on the destination wakes up when the mirror
//! appends, as it would for a local produce, instead of sleeping out its whole `max_wait_ms`.

mod common;

use common::mirrors::*;
use common::{Serve, free_port};
use mirrorlog_broker::client::Client;
use mirrorlog_index::{LeaderEpoch, Offset};
use mirrorlog_mirror::source::{FetchRequest, PartitionFetch, SourceCluster};
use mirrorlog_segment::Batches;
use std::time::{Duration, Instant};

/// Far longer than the mirror needs to copy a batch (milliseconds), so that a fetch answered
/// only when it expires cannot pass.
const MAX_WAIT_MS: i32 = 120_000;

#[test]
fn a_long_poll_on_a_mirror_topic_returns_when_the_mirror_appends() {
    let dir = tempfile::tempdir().unwrap();
    let src = Serve::start(&dir.path().join("src"), free_port());
    let dst = Serve::start(&dir.path().join("dst"), free_port());
    let d = dst.addr.as_str();
    let mut sc = Client::connect(&src.addr).unwrap();
    sc.create_topic("events", 1, &[]).unwrap();
    let end = produce(&mut sc, "events", 0, 1, "first");
    create_mirror(d, "m", &src.addr, &[]);
    ok(d, &["--start", "--mirror", "m", "--topics", "events"]);
    wait_mirrored(d, "m", "events", 0, end);

    // A consumer of the destination waits at the log end for more.
    let r = reader(d);
    let md = r.metadata(Some(&["events".to_string()])).unwrap();
    let (id, leader) = (md.topics[0].id, md.topics[0].partitions[0].leader);
    let poll = std::thread::spawn(move || {
        let req = FetchRequest {
            partitions: vec![PartitionFetch {
                topic: "events".into(),
                topic_id: id,
                partition: 0,
                fetch_offset: Offset(end),
                last_fetched_epoch: LeaderEpoch::NONE,
                current_leader_epoch: LeaderEpoch::NONE,
                max_bytes: 1 << 20,
            }],
            max_wait_ms: MAX_WAIT_MS,
            min_bytes: 1,
            max_bytes: 1 << 20,
        };
        let started = Instant::now();
        let resp = r.fetch(leader, &req).unwrap();
        (started.elapsed(), resp)
    });
    // Let the fetch reach the broker and wait (if it has not yet, it finds the data at once and
    // the test passes either way).
    std::thread::sleep(Duration::from_millis(300));
    let new_end = produce(&mut sc, "events", 0, 1, "second");
    let (took, resp) = poll.join().unwrap();
    let p = &resp.partitions[0];
    assert_eq!(p.error, 0);
    let got: Vec<i64> = Batches::new(p.records.clone())
        .map(|b| b.unwrap().base_offset().get())
        .collect();
    assert_eq!(got, [end], "the mirrored batch, at its source offset");
    assert!(new_end > end);
    assert!(
        took < Duration::from_millis(MAX_WAIT_MS as u64 / 2),
        "the long poll slept {took:?} of its {MAX_WAIT_MS} ms instead of waking on the mirror's append"
    );
}
