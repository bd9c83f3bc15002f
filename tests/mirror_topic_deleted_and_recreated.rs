//! Scenario: a client deletes a mirror topic on the destination and creates an ordinary topic
//! under the same name (a new topic id). The mirror's partitions belong to the deleted topic
//! (KIP-1279 keys mirror state by topic id): the mirror must never write the source's records
//! into the new, unrelated topic.

mod common;

use common::mirrors::*;
use common::{Serve, free_port};
use mirrorlog_broker::client::Client;
use mirrorlog_index::{LeaderEpoch, Offset};
use mirrorlog_mirror::source::{FetchRequest, PartitionFetch, SourceCluster};
use std::time::{Duration, Instant};

#[test]
fn the_mirror_never_writes_into_a_topic_recreated_under_its_name() {
    let dir = tempfile::tempdir().unwrap();
    let src = Serve::start(&dir.path().join("src"), free_port());
    let dst = Serve::start(&dir.path().join("dst"), free_port());
    let d = dst.addr.as_str();
    let mut sc = Client::connect(&src.addr).unwrap();
    sc.create_topic("events", 1, &[]).unwrap();
    let end = produce(&mut sc, "events", 0, 2, "src");
    create_mirror(d, "m", &src.addr, &[]);
    ok(d, &["--start", "--mirror", "m", "--topics", "events"]);
    wait_mirrored(d, "m", "events", 0, end);

    let mut dc = Client::connect(d).unwrap();
    if let Err(e) = dc.delete_topic("events") {
        // Refusing to delete a mirrored topic is also consistent: nothing more to check.
        eprintln!("DeleteTopics on a mirror topic refused: {e}");
        return;
    }
    dc.create_topic("events", 1, &[]).unwrap();
    let new_id = reader(d)
        .metadata(Some(&["events".to_string()]))
        .unwrap()
        .topics[0]
        .id;
    // The source moves on; the mirror keeps running.
    let src_end = produce(&mut sc, "events", 0, 2, "src-more");
    assert!(src_end > end);

    // Give the mirror ample time (it copies a batch in milliseconds), then look.
    let deadline = Instant::now() + Duration::from_secs(5);
    let r = reader(d);
    loop {
        let md = r.metadata(Some(&["events".to_string()])).unwrap();
        let t = &md.topics[0];
        assert_eq!(t.id, new_id, "the recreated topic kept its id");
        let req = FetchRequest {
            partitions: vec![PartitionFetch {
                topic: "events".into(),
                topic_id: new_id,
                partition: 0,
                fetch_offset: Offset(0),
                last_fetched_epoch: LeaderEpoch::NONE,
                current_leader_epoch: LeaderEpoch::NONE,
                max_bytes: 1 << 20,
            }],
            max_wait_ms: 0,
            min_bytes: 1,
            max_bytes: 1 << 20,
        };
        let resp = r.fetch(t.partitions[0].leader, &req).unwrap();
        let p = &resp.partitions[0];
        assert!(
            p.records.is_empty() && p.high_watermark.get() <= 0,
            "the mirror wrote the source's records into the new topic (error {}, high watermark {}, {} bytes)",
            p.error,
            p.high_watermark.get(),
            p.records.len()
        );
        if Instant::now() >= deadline {
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The same for the group offset sync: the source's committed offsets of the mirrored topic
/// must not be committed for the unrelated topic created under its name.
#[test]
fn the_group_offset_sync_never_commits_for_a_topic_recreated_under_its_name() {
    let dir = tempfile::tempdir().unwrap();
    let src = Serve::start(&dir.path().join("src"), free_port());
    let dst = Serve::start(&dir.path().join("dst"), free_port());
    let d = dst.addr.as_str();
    let mut sc = Client::connect(&src.addr).unwrap();
    sc.create_topic("events", 1, &[]).unwrap();
    let end = produce(&mut sc, "events", 0, 2, "src");
    sc.commit_offsets("g", "events", &[(0, 15, -1)]).unwrap();
    create_mirror(
        d,
        "m",
        &src.addr,
        &["mirror.metadata.refresh.interval.ms=200"],
    );
    ok(d, &["--start", "--mirror", "m", "--topics", "events"]);
    wait_mirrored(d, "m", "events", 0, end);
    let mut dc = Client::connect(d).unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while dc.fetch_offsets("g", "events", &[0]).unwrap()[0].1 != 15 {
        assert!(
            Instant::now() < deadline,
            "the group offset was never synced"
        );
        std::thread::sleep(Duration::from_millis(50));
    }

    if let Err(e) = dc.delete_topic("events") {
        eprintln!("DeleteTopics on a mirror topic refused: {e}");
        return;
    }
    dc.create_topic("events", 1, &[]).unwrap();
    // The new topic's own records and its own consumer's position.
    assert_eq!(produce(&mut dc, "events", 0, 1, "local"), 10);
    dc.commit_offsets("g", "events", &[(0, 3, -1)]).unwrap();
    sc.commit_offsets("g", "events", &[(0, 17, -1)]).unwrap();
    // Many sync intervals.
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(
        dc.fetch_offsets("g", "events", &[0]).unwrap(),
        vec![(0, 3)],
        "the mirror committed the source group's offset for the new, unrelated topic"
    );
}
