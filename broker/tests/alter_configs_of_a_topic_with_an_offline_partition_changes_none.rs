//! Bug: IncrementalAlterConfigs (and AlterConfigs) of a topic with a partition in a data
//! directory offline since start wrote the new config partition by partition and failed at the
//! offline one: the partitions before it kept the change, the rest did not, so the topic came
//! back from the answered error with two configs (before the registry counted offline
//! partitions, an offline last partition was even skipped and the request answered success).
//! The offline partition's `topic.config` cannot be written, so the change is refused whole,
//! KAFKA_STORAGE_ERROR, nothing written — as DeleteTopics refuses such a topic.

use crate::common;

use common::offline_partition::topic_t_with_partition_offline;
use kafka_protocol::ResponseError as E;
use mirrorlog_broker::handlers::admin;
use mirrorlog_engine::config::LogConfig;

#[test]
fn a_config_change_is_refused_whole_while_a_partition_is_offline() {
    let setup = topic_t_with_partition_offline(1, &[]);
    let b = &setup.broker;

    let (code, message) =
        common::configs::incremental_alter(b, "t", "retention.ms", admin::OP_SET, Some("4242"));
    assert_eq!(code, E::KafkaStorageError.code(), "{message:?}");
    assert_eq!(
        b.partition("t", 0).unwrap().read().config().retention_ms,
        LogConfig::default().retention_ms,
        "partition 0 kept its config"
    );
    setup.broker.shutdown().unwrap();
}
