//! Kafka's Java AdminClient (kafka-clients 4.3.0) manages topics on `mirrorlog serve`:
//! createTopics (partitions, configs, replication factor 1 and -1/default, validateOnly, the
//! errors of an existing name, invalid configs, replication factor, partitions and name),
//! listTopics with and without internal topics, describeTopics by name and by topic id,
//! createPartitions and deleteTopics by name and by id (`AdminScenarios topics`).

mod common;

use common::java::{JavaClient, assert_printed};
use common::{Serve, free_port};

#[test]
fn the_java_admin_client_creates_describes_grows_and_deletes_topics() {
    let Some(java) = JavaClient::compile("AdminScenarios") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut broker = Serve::start(dir.path(), free_port());
    let out = java.run(&["topics", &broker.addr]);
    assert_printed(
        &out,
        &[
            ("create.t1", "ok"),
            ("create.t1.partitions", "ok:3"),
            ("create.t1.rf", "1"),
            ("create.t1.id_set", "true"),
            ("create.t2", "ok"),
            ("create.t2.partitions", "ok:1"),
            ("create.t2.rf", "1"),
            ("create.t3", "ok"),
            ("create.t3.partitions", "ok:2"),
            ("create.t3.rf", "1"),
            (
                "create.t1.config.retention.ms",
                "3600000:DYNAMIC_TOPIC_CONFIG",
            ),
            (
                "create.t1.config.segment.bytes",
                "1048576:DYNAMIC_TOPIC_CONFIG",
            ),
            ("create.t1.config.cleanup.policy", "delete:DEFAULT_CONFIG"),
            ("validate.v1", "ok"),
            ("validate.v1.partitions", "4"),
            ("exists.t1", "TopicExistsException"),
            ("invalid.config.value", "InvalidConfigurationException"),
            ("invalid.config.name", "InvalidConfigurationException"),
            ("invalid.rf3", "InvalidReplicationFactorException"),
            ("invalid.partitions0", "InvalidPartitionsException"),
            ("invalid.name", "InvalidTopicException"),
            ("list", "[t1, t2, t3]"),
            (
                "list.internal",
                "[__consumer_offsets(internal), __transaction_state(internal), t1, t2, t3]",
            ),
            (
                "describe.t1",
                "0:1:[1]:[1],1:1:[1]:[1],2:1:[1]:[1] internal=false",
            ),
            ("describe.t2", "0:1:[1]:[1] internal=false"),
            ("describe.t3", "0:1:[1]:[1],1:1:[1]:[1] internal=false"),
            ("describe.id_matches_create", "true"),
            // By topic id (Metadata v12 with ids and empty names).
            ("describe.byid.t1", "t1 0:1:[1]:[1],1:1:[1]:[1],2:1:[1]:[1]"),
            ("describe.byid.t2", "t2"),
            ("describe.unknown", "UnknownTopicOrPartitionException"),
            ("describe.unknown_id", "UnknownTopicIdException"),
            ("partitions.t1.to5", "ok"),
            ("partitions.t1.after", "5"),
            ("partitions.t1.to2", "InvalidPartitionsException"),
            ("partitions.t1.same", "InvalidPartitionsException"),
            ("partitions.t2.validate", "ok"),
            ("partitions.t2.after_validate", "1"),
            ("partitions.unknown", "UnknownTopicOrPartitionException"),
            ("delete.t2.byname", "ok"),
            ("delete.t1.byid", "ok"),
            ("delete.unknown", "UnknownTopicOrPartitionException"),
            ("delete.unknown_id", "UnknownTopicIdException"),
            ("list.after_delete", "[t3]"),
        ],
    );
    assert_eq!(broker.stop(), Some(0), "clean exit on SIGTERM");
}
