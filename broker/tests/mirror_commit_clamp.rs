//! KIP-1279 invariant 6 on the destination: any commit to a mirror (read-only) partition is
//! clamped into [log start, high watermark], whoever sends it; ordinary topics keep Kafka's
//! behaviour (any offset may be committed).

use mirrorlog_broker::client::Client;
use mirrorlog_broker::running::RunningBroker;
use mirrorlog_engine::config::LogConfig;
use mirrorlog_engine::log::ReplicaOrigin;
use mirrorlog_index::{Offset, TimestampMs};
use mirrorlog_segment::BatchBuilder;

#[test]
fn commits_to_a_mirror_partition_are_clamped_into_its_log() {
    let dir = tempfile::tempdir().unwrap();
    let rb = RunningBroker::start_local(dir.path(), 1).unwrap();
    let b = rb.broker.clone();
    let mirror_cfg = LogConfig {
        read_only: true,
        ..LogConfig::default()
    };
    b.topics
        .create(&b.logs, "mirrored", 1, mirror_cfg, None)
        .unwrap();
    b.topics
        .create(&b.logs, "plain", 1, LogConfig::default(), None)
        .unwrap();
    {
        let h = b.partition("mirrored", 0).unwrap();
        let mut log = h.write();
        let mut batch = BatchBuilder::new().base_offset(Offset(0));
        for _ in 0..10 {
            batch.append(TimestampMs(1), None, Some(b"x"), &[]);
        }
        log.append_as_follower(batch.build().into_bytes(), ReplicaOrigin::Mirror)
            .unwrap();
        let leo = log.log_end_offset();
        log.update_high_watermark(leo);
    }
    let mut c = Client::connect(&rb.addr.to_string()).unwrap();
    c.commit_offsets("g", "mirrored", &[(0, 1_000, -1)])
        .unwrap();
    assert_eq!(
        c.fetch_offsets("g", "mirrored", &[0]).unwrap(),
        vec![(0, 10)],
        "clamped to the high watermark"
    );
    c.commit_offsets("g", "plain", &[(0, 1_000, -1)]).unwrap();
    assert_eq!(
        c.fetch_offsets("g", "plain", &[0]).unwrap(),
        vec![(0, 1_000)],
        "ordinary topics are not clamped"
    );
    drop((c, b));
    rb.shutdown().unwrap();
}
