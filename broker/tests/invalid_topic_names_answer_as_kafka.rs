//! Bug: DescribeProducers of a topic name no topic could have (`..`, a space, 250 characters)
//! answered UNKNOWN_TOPIC_OR_PARTITION; Kafka's `handleDescribeProducersRequest` validates the
//! name first (`checkValidTopic`) and answers INVALID_TOPIC_EXCEPTION with the reason for each
//! partition asked.
//!
//! The other requests this broker answers per topic name are checked against Kafka's too, so
//! that they stay as Kafka answers them: DescribeConfigs of a topic resource validates the name
//! (`ConfigHelper.describeConfigs`: INVALID_TOPIC_EXCEPTION); ListOffsets, OffsetForLeaderEpoch,
//! DeleteRecords, Produce and Fetch only look the partition up (UNKNOWN_TOPIC_OR_PARTITION), as
//! do CreatePartitions and DeleteTopics on Kafka's controller (`ReplicationControlManager`).

use crate::common;

use kafka_protocol::ResponseError as E;
use kafka_protocol::messages::create_partitions_request::CreatePartitionsTopic;
use kafka_protocol::messages::delete_records_request::{
    DeleteRecordsPartition, DeleteRecordsTopic,
};
use kafka_protocol::messages::delete_topics_request::DeleteTopicState;
use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
use kafka_protocol::messages::describe_producers_request::TopicRequest;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::offset_for_leader_epoch_request::{
    OffsetForLeaderPartition, OffsetForLeaderTopic,
};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use mirrorlog_broker::broker::Broker;
use mirrorlog_broker::handlers::{admin, fetch, offsets, produce};
use mirrorlog_index::TimestampMs;
use mirrorlog_segment::BatchBuilder;

fn tn(v: &str) -> TopicName {
    TopicName(StrBytes::from_string(v.to_string()))
}

fn invalid_names() -> Vec<String> {
    vec!["..".into(), "has space".into(), "a".repeat(250)]
}

fn describe_producers(b: &Broker, name: &str) -> Vec<(i32, i16, Option<String>)> {
    let mut r = DescribeProducersRequest::default();
    r.topics = vec![
        TopicRequest::default()
            .with_name(tn(name))
            .with_partition_indexes(vec![0, 1]),
    ];
    let resp = offsets::describe_producers(b, r, 0);
    assert_eq!(resp.topics.len(), 1);
    assert_eq!(resp.topics[0].name.0.as_str(), name);
    resp.topics[0]
        .partitions
        .iter()
        .map(|p| {
            (
                p.partition_index,
                p.error_code,
                p.error_message.as_ref().map(|m| m.to_string()),
            )
        })
        .collect()
}

#[test]
fn describe_producers_of_an_invalid_name_is_an_invalid_topic() {
    let dir = tempfile::tempdir().unwrap();
    let b = common::plain_broker(dir.path(), 1_700_000_000_000);
    for name in invalid_names() {
        let answered = describe_producers(&b, &name);
        assert_eq!(answered.len(), 2, "{name}");
        for (i, (p, code, message)) in answered.into_iter().enumerate() {
            assert_eq!(p, i as i32, "{name}");
            assert_eq!(code, E::InvalidTopicException.code(), "{name}");
            assert!(message.is_some_and(|m| !m.is_empty()), "{name}: a reason");
        }
    }
    // A valid name the broker does not have stays unknown.
    assert!(
        describe_producers(&b, "absent")
            .iter()
            .all(|(_, code, _)| *code == E::UnknownTopicOrPartition.code())
    );
}

#[test]
fn the_other_topic_requests_answer_an_invalid_name_as_kafka() {
    let dir = tempfile::tempdir().unwrap();
    let b = common::plain_broker(dir.path(), 1_700_000_000_000);
    let unknown = E::UnknownTopicOrPartition.code();
    for name in invalid_names() {
        // DescribeConfigs validates the name.
        let mut r = DescribeConfigsRequest::default();
        r.resources = vec![
            DescribeConfigsResource::default()
                .with_resource_type(2)
                .with_resource_name(StrBytes::from_string(name.clone())),
        ];
        let resp = admin::describe_configs(&b, r, 4);
        assert_eq!(
            resp.results[0].error_code,
            E::InvalidTopicException.code(),
            "DescribeConfigs {name}"
        );

        // ListOffsets.
        let mut p = ListOffsetsPartition::default();
        p.partition_index = 0;
        p.timestamp = -1;
        p.current_leader_epoch = -1;
        let mut t = ListOffsetsTopic::default();
        t.name = tn(&name);
        t.partitions = vec![p];
        let mut r = ListOffsetsRequest::default();
        r.replica_id = BrokerId(-1);
        r.topics = vec![t];
        let resp = offsets::list_offsets(&b, r, 7);
        assert_eq!(
            resp.topics[0].partitions[0].error_code, unknown,
            "ListOffsets {name}"
        );

        // OffsetForLeaderEpoch.
        let mut p = OffsetForLeaderPartition::default();
        p.partition = 0;
        p.leader_epoch = 0;
        p.current_leader_epoch = -1;
        let mut t = OffsetForLeaderTopic::default();
        t.topic = tn(&name);
        t.partitions = vec![p];
        let mut r = OffsetForLeaderEpochRequest::default();
        r.replica_id = BrokerId(-1);
        r.topics = vec![t];
        let resp = offsets::offset_for_leader_epoch(&b, r, 4);
        assert_eq!(
            resp.topics[0].partitions[0].error_code, unknown,
            "OffsetForLeaderEpoch {name}"
        );

        // DeleteRecords.
        let mut p = DeleteRecordsPartition::default();
        p.partition_index = 0;
        p.offset = 0;
        let mut t = DeleteRecordsTopic::default();
        t.name = tn(&name);
        t.partitions = vec![p];
        let mut r = DeleteRecordsRequest::default();
        r.topics = vec![t];
        let resp = offsets::delete_records(&b, r, 2);
        assert_eq!(
            resp.topics[0].partitions[0].error_code, unknown,
            "DeleteRecords {name}"
        );

        // Produce.
        let mut bb = BatchBuilder::new();
        bb.append(TimestampMs(1_700_000_000_000), None, Some(b"v"), &[]);
        let mut pd = PartitionProduceData::default();
        pd.index = 0;
        pd.records = Some(bb.build().into_bytes());
        let mut td = TopicProduceData::default();
        td.name = tn(&name);
        td.partition_data.push(pd);
        let mut r = ProduceRequest::default();
        r.acks = 1;
        r.timeout_ms = 1000;
        r.topic_data.push(td);
        let resp = produce::handle(&b, r, 9).expect("acks 1 is answered");
        assert_eq!(
            resp.responses[0].partition_responses[0].error_code, unknown,
            "Produce {name}"
        );

        // Fetch by name.
        let mut fp = FetchPartition::default();
        fp.partition = 0;
        fp.fetch_offset = 0;
        fp.partition_max_bytes = 1 << 20;
        let mut ft = FetchTopic::default();
        ft.topic = tn(&name);
        ft.partitions.push(fp);
        let mut r = FetchRequest::default();
        r.max_wait_ms = 0;
        r.max_bytes = 1 << 20;
        r.session_epoch = -1;
        r.topics.push(ft);
        let resp = fetch::handle(&b, r, 12);
        assert_eq!(
            resp.responses[0].partitions[0].error_code, unknown,
            "Fetch {name}"
        );

        // CreatePartitions and DeleteTopics (on Kafka's controller).
        let mut r = CreatePartitionsRequest::default();
        r.timeout_ms = 30_000;
        r.topics = vec![
            CreatePartitionsTopic::default()
                .with_name(tn(&name))
                .with_count(2),
        ];
        let resp = admin::create_partitions(&b, r, 3);
        assert_eq!(
            resp.results[0].error_code, unknown,
            "CreatePartitions {name}"
        );
        let mut r = DeleteTopicsRequest::default();
        r.topics = vec![DeleteTopicState::default().with_name(Some(tn(&name)))];
        let resp = admin::delete_topics(&b, r, 6);
        assert_eq!(resp.responses[0].error_code, unknown, "DeleteTopics {name}");
    }
}
