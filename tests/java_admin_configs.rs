//! Kafka's Java AdminClient (kafka-clients 4.3.0) reads and changes configs on
//! `mirrorlog serve`: describeConfigs of a topic and of the broker, with and without synonyms
//! and documentation (Kafka topic configs mirrorlog does not implement listed at its values);
//! incrementalAlterConfigs SET, DELETE, SUBTRACT and APPEND (a list's values
//! kept unique, a non-list key refused with INVALID_CONFIG as Kafka's controller does), invalid
//! values, unknown keys and topics, validateOnly, and a broker config (refused: this broker's
//! settings are static) (`AdminScenarios configs`). The deprecated `alterConfigs` (AlterConfigs,
//! API 33) is gone from the 4.x Admin interface, so it has no scenario.

mod common;

use common::java::{JavaClient, assert_printed};
use common::{Serve, free_port};

#[test]
fn the_java_admin_client_describes_and_alters_configs() {
    let Some(java) = JavaClient::compile("AdminScenarios") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut broker = Serve::start(dir.path(), free_port());
    let out = java.run(&["configs", &broker.addr]);
    let common = "ro=false sensitive=false";
    assert_printed(
        &out,
        &[
            (
                "topic.plain.retention.ms",
                &format!(
                    "1000000 DYNAMIC_TOPIC_CONFIG default=false {common} type=LONG doc=false synonyms=[]"
                ),
            ),
            (
                "topic.plain.segment.bytes",
                &format!(
                    "1073741824 DEFAULT_CONFIG default=true {common} type=INT doc=false synonyms=[]"
                ),
            ),
            (
                "topic.full.retention.ms",
                &format!(
                    "1000000 DYNAMIC_TOPIC_CONFIG default=false {common} type=LONG doc=true \
                     synonyms=[retention.ms=1000000@DYNAMIC_TOPIC_CONFIG, log.retention.ms=604800000@DEFAULT_CONFIG]"
                ),
            ),
            (
                "topic.full.segment.bytes",
                &format!(
                    "1073741824 DEFAULT_CONFIG default=true {common} type=INT doc=true \
                     synonyms=[log.segment.bytes=1073741824@DEFAULT_CONFIG]"
                ),
            ),
            (
                "topic.full.cleanup.policy",
                &format!(
                    "delete DEFAULT_CONFIG default=true {common} type=LIST doc=true \
                     synonyms=[log.cleanup.policy=delete@DEFAULT_CONFIG]"
                ),
            ),
            (
                "topic.full.min.insync.replicas",
                &format!(
                    "1 DEFAULT_CONFIG default=true {common} type=INT doc=true \
                     synonyms=[min.insync.replicas=1@DEFAULT_CONFIG]"
                ),
            ),
            (
                "topic.full.min.cleanable.dirty.ratio",
                &format!(
                    "0.5 DEFAULT_CONFIG default=true {common} type=DOUBLE doc=true \
                     synonyms=[log.cleaner.min.cleanable.ratio=0.5@DEFAULT_CONFIG]"
                ),
            ),
            (
                "topic.full.remote.storage.enable",
                &format!(
                    "false DEFAULT_CONFIG default=true {common} type=BOOLEAN doc=true synonyms=[]"
                ),
            ),
            ("broker.count_positive", "true"),
            (
                "broker.log.retention.ms",
                "604800000 DEFAULT_CONFIG default=true ro=true sensitive=false type=LONG doc=true \
                 synonyms=[log.retention.ms=604800000@DEFAULT_CONFIG]",
            ),
            ("topic.unknown", "UnknownTopicOrPartitionException"),
            ("alter.set", "ok"),
            ("after.set.retention.ms", "2000000 DYNAMIC_TOPIC_CONFIG"),
            ("after.set.segment.ms", "100000 DYNAMIC_TOPIC_CONFIG"),
            ("alter.delete", "ok"),
            ("after.delete.segment.ms", "604800000 DEFAULT_CONFIG"),
            ("alter.subtract", "ok"),
            ("after.subtract.cleanup.policy", "[] DYNAMIC_TOPIC_CONFIG"),
            ("alter.append", "ok"),
            (
                "after.append.cleanup.policy",
                "[delete] DYNAMIC_TOPIC_CONFIG",
            ),
            ("alter.append.twice", "ok"),
            ("after.append.twice.cleanup.policy", "[delete]"),
            ("alter.append.nonlist", "InvalidConfigurationException"),
            ("alter.invalid", "InvalidConfigurationException"),
            ("alter.unknown_key", "InvalidConfigurationException"),
            ("alter.validate_only", "ok"),
            ("after.validate_only.retention.ms", "2000000"),
            ("alter.unknown_topic", "UnknownTopicOrPartitionException"),
            ("alter.broker", "InvalidRequestException"),
        ],
    );
    assert_eq!(broker.stop(), Some(0), "clean exit on SIGTERM");
}
