//! DescribeLogDirs (API 35, what the Java AdminClient's `describeLogDirs` and
//! `describeReplicaLogDirs` send): the data directory by its absolute path, each partition with
//! its size on disk and no lag, the file system's total and usable bytes from v4 only, and only
//! the asked partitions when the request names some (their topics' other partitions left out).

use crate::common;

use bytes::BytesMut;
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::describe_log_dirs_request::DescribableLogDirTopic;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::{Encodable, StrBytes};
use mirrorlog_broker::handlers::{admin, log_dirs};
use mirrorlog_engine::log::LeaderOrigin;
use mirrorlog_index::{LeaderEpoch, TimestampMs};
use mirrorlog_segment::BatchBuilder;

const NOW_MS: i64 = 1_700_000_000_000;

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

/// A topic's listed partitions: (topic, [(partition, size, lag)]).
type Listed = (String, Vec<(i32, i64, i64)>);

/// The listed partitions of the first result, internal topics left out.
fn listed(r: &DescribeLogDirsResponse) -> Vec<Listed> {
    r.results[0]
        .topics
        .iter()
        .filter(|t| !t.name.0.starts_with("__"))
        .map(|t| {
            (
                t.name.0.to_string(),
                t.partitions
                    .iter()
                    .map(|p| (p.partition_index, p.partition_size, p.offset_lag))
                    .collect(),
            )
        })
        .collect()
}

#[test]
fn describe_log_dirs_lists_the_data_dir_its_partitions_and_its_space() {
    let dir = tempfile::tempdir().unwrap();
    let b = common::plain_broker(dir.path(), NOW_MS);
    let mut t = CreatableTopic::default();
    t.name = TopicName(s("t"));
    t.num_partitions = 2;
    t.replication_factor = 1;
    let mut r = CreateTopicsRequest::default();
    r.topics = vec![t];
    assert_eq!(admin::create_topics(&b, r, 7).topics[0].error_code, 0);
    let mut batch = BatchBuilder::new();
    for _ in 0..10 {
        batch.append(TimestampMs(NOW_MS), None, Some(&[7u8; 100][..]), &[]);
    }
    let h = b.partition("t", 1).unwrap();
    h.write()
        .append_as_leader(
            batch.build().into_bytes(),
            LeaderEpoch(0),
            LeaderOrigin::Client,
        )
        .unwrap();
    let size1 = h.read().size_bytes() as i64;
    assert!(size1 > 1000);

    let every = DescribeLogDirsRequest::default().with_topics(None);
    let all = log_dirs::describe_log_dirs(&b, every, 4);
    assert_eq!(all.error_code, 0);
    assert_eq!(all.results.len(), 1);
    let d = &all.results[0];
    assert_eq!(d.error_code, 0);
    assert_eq!(
        d.log_dir.as_str(),
        std::path::absolute(dir.path())
            .unwrap()
            .display()
            .to_string()
    );
    assert!(d.total_bytes > 0 && d.usable_bytes >= 0 && d.usable_bytes <= d.total_bytes);
    assert_eq!(
        listed(&all),
        [("t".to_string(), vec![(0, 0, 0), (1, size1, 0)])]
    );
    let mut buf = BytesMut::new();
    all.encode(&mut buf, 4).unwrap();

    let one = DescribeLogDirsRequest::default().with_topics(Some(vec![
        DescribableLogDirTopic::default()
            .with_topic(TopicName(s("t")))
            .with_partitions(vec![1]),
    ]));
    let r = log_dirs::describe_log_dirs(&b, one, 3);
    assert_eq!(listed(&r), [("t".to_string(), vec![(1, size1, 0)])]);
    assert_eq!(
        (r.results[0].total_bytes, r.results[0].usable_bytes),
        (-1, -1),
        "no space fields before v4"
    );
    let mut buf = BytesMut::new();
    r.encode(&mut buf, 3).unwrap();
}
