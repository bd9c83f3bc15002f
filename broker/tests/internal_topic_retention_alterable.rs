//! `__consumer_offsets` and `__transaction_state` are kept by mirrorlog with `retention.ms=-1`
//! and `retention.bytes=-1` because it has no log compaction: their owners rely on every record
//! staying (group/transaction state is reloaded from the whole log). In Kafka these topics are
//! `cleanup.policy=compact`, so changing or deleting their `retention.ms` never deletes live
//! offsets. mirrorlog's IncrementalAlterConfigs accepts SET/DELETE of `retention.ms` /
//! `retention.bytes` on them (it refuses to create, grow, delete or trim them), which turns on
//! time/size retention: old offset commits of groups are deleted and lost at the next reload.

use crate::common;

use mirrorlog_broker::broker::Broker;
use mirrorlog_broker::group::{OFFSETS_TOPIC, offsets_topic_id};
use mirrorlog_broker::handlers::admin::*;
use mirrorlog_index::TopicPartition;

fn alter(b: &Broker, topic: &str, key: &str, op: i8, value: Option<&str>) -> i16 {
    common::configs::incremental_alter(b, topic, key, op, value).0
}

#[test]
fn the_offsets_topic_keeps_unlimited_retention() {
    let dir = tempfile::tempdir().unwrap();
    let b = common::plain_broker(dir.path(), 1_700_000_000_000);
    // As the group coordinator creates it (group/mod.rs): never deleted by retention.
    let tp = TopicPartition {
        topic: OFFSETS_TOPIC.to_string(),
        partition: 0,
    };
    let mut c = b.logs.default_log_config().clone();
    c.retention_ms = -1;
    c.retention_bytes = -1;
    b.logs.create(&tp, offsets_topic_id(), c).unwrap();
    b.topics.refresh(&b.logs);

    // `kafka-configs --alter --delete-config retention.ms` (harmless on Kafka's compacted topic).
    let code = alter(&b, OFFSETS_TOPIC, "retention.ms", OP_DELETE, None);
    let code2 = alter(&b, OFFSETS_TOPIC, "retention.bytes", OP_SET, Some("1024"));
    let after = b.logs.get(&tp).unwrap().read().config().clone();
    assert_eq!(
        (after.retention_ms, after.retention_bytes),
        (-1, -1),
        "alter answered {code} / {code2}: the offsets topic now deletes old offset commits"
    );
}
