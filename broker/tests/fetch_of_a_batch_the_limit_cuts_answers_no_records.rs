//! Kafka's `LogSegment.read` marks a read whose byte limit cuts its first batch
//! (`firstEntryIncomplete`), and `ReplicaManager.readFromLog` answers such a partition with no
//! records (and no aborted transactions). The broker sent the cut bytes: a partition after the
//! first one with data, whose first batch did not fit what was left of `max_bytes` or its
//! `partition_max_bytes`, carried part of a batch and nothing whole — the Java consumer fails on
//! that ("Received a non-empty fetch response from the server, but no complete records were
//! found") — and the useless bytes counted against `max_bytes` and `min_bytes`.

use crate::common;

use common::fetch_session::{broker_with, fetch_at, session_fetch};
use common::produce::{batch, request};
use mirrorlog_broker::broker::BrokerConfig;
use mirrorlog_broker::handlers::produce;
use mirrorlog_segment::Batches;

#[test]
fn a_later_partition_whose_first_batch_does_not_fit_answers_no_records() {
    let dir = tempfile::tempdir().unwrap();
    let (b, _) = broker_with(
        BrokerConfig::new(dir.path(), "127.0.0.1", 9092),
        &[("t", 2)],
    );
    let small = batch(&[b's'; 100]);
    let large = batch(&[b'l'; 1000]);
    let resp = produce::handle(
        &b,
        request(
            1,
            vec![("t", 0, Some(small.clone())), ("t", 1, Some(large.clone()))],
        ),
        9,
    )
    .unwrap();
    assert!(
        resp.responses[0]
            .partition_responses
            .iter()
            .all(|p| p.error_code == 0)
    );

    // (what is left of max_bytes, partition_max_bytes of t-1): each smaller than t-1's batch.
    let half = large.len() as i32 / 2;
    for (left, partition_max) in [(half, 1 << 20), (1 << 20, half)] {
        for isolation in [0, 1] {
            let mut r = session_fetch(0, -1, &[("t", 0, 0), ("t", 1, 0)]);
            r.max_bytes = small.len() as i32 + left;
            r.isolation_level = isolation;
            r.topics[0].partitions[1].partition_max_bytes = partition_max;
            let resp = fetch_at(&b, r, 12);
            let parts = &resp.responses[0].partitions;
            let whole = |i: usize| {
                Batches::new(parts[i].records.clone().unwrap_or_default())
                    .collect::<Result<Vec<_>, _>>()
                    .unwrap()
                    .len()
            };
            assert_eq!(whole(0), 1, "t-0 answers its batch");
            let cut = &parts[1];
            assert_eq!(cut.error_code, 0);
            assert_eq!(
                cut.records.as_ref().map_or(0, |r| r.len()),
                0,
                "left {left}, partition max {partition_max}, isolation {isolation}: \
                 no part of a batch"
            );
            assert!(cut.aborted_transactions.is_none());
            assert_eq!(cut.high_watermark, 1);
        }
    }
    // Room for it: t-1's batch comes whole.
    let mut r = session_fetch(0, -1, &[("t", 0, 0), ("t", 1, 0)]);
    r.max_bytes = (small.len() + large.len()) as i32;
    let resp = fetch_at(&b, r, 12);
    let records = resp.responses[0].partitions[1].records.clone().unwrap();
    assert_eq!(records.len(), large.len());
}
