//! A DeleteTopics that fails part-way after the topic left the registry (here: its only
//! partition was renamed away, then the directory sync found no file descriptor) answers
//! KAFKA_STORAGE_ERROR and returns before the coordinators hear of the deletion
//! (`handlers/admin.rs` `delete_one`: `deleted?` before `b.topic_deleted`). The topic is gone —
//! a retry answers UNKNOWN_TOPIC_OR_PARTITION and never reaches the hook either — but its
//! committed group offsets stay, so the topic created again under the name is resumed at an
//! offset committed for the old one (Kafka's `onPartitionsDeleted` drops them).

mod common;

use bytes::Bytes;
use kafka_protocol::messages::delete_topics_request::DeleteTopicState;
use kafka_protocol::messages::{DeleteTopicsRequest, TopicName};
use kafka_protocol::protocol::StrBytes;
use mirrorlog_broker::broker::Broker;
use mirrorlog_broker::client::Client;
use mirrorlog_broker::handlers::admin;
use mirrorlog_broker::running::RunningBroker;
use mirrorlog_index::TimestampMs;
use mirrorlog_segment::BatchBuilder;

fn batch() -> Bytes {
    let mut b = BatchBuilder::new();
    b.append(TimestampMs(1), None, Some(b"v"), &[]);
    b.build().into_bytes()
}

fn delete(b: &Broker) -> i16 {
    let mut st = DeleteTopicState::default();
    st.name = Some(TopicName(StrBytes::from_static_str("t")));
    let mut r = DeleteTopicsRequest::default();
    r.topics.push(st);
    r.timeout_ms = 30_000;
    admin::delete_topics(b, r, 6).responses[0].error_code
}

#[test]
fn a_delete_failing_after_the_registry_dropped_the_topic_still_drops_its_offsets() {
    let dir = tempfile::tempdir().unwrap();
    let rb = RunningBroker::start_local(dir.path(), 1).unwrap();
    let b = rb.broker.clone();
    let mut c = Client::connect(&rb.addr.to_string()).unwrap();
    c.create_topic("t", 1, &[]).unwrap();
    for _ in 0..5 {
        c.produce("t", 0, batch(), -1, None).unwrap();
    }
    c.commit_offsets("g", "t", &[(0, 5, -1)]).unwrap();

    // A request in flight holds the partition (and its files) while it is deleted.
    let held = b.partition("t", 0).unwrap();
    let code = common::with_spare_fds(0, || delete(&b));
    drop(held);
    assert_ne!(code, 0, "the delete was meant to fail part-way");
    assert!(b.topics.get("t").is_none(), "the topic left the registry");
    assert!(b.partition("t", 0).is_none(), "and the log manager");

    c.create_topic("t", 1, &[]).unwrap();
    assert_eq!(
        c.fetch_offsets("g", "t", &[0]).unwrap(),
        vec![(0, -1)],
        "DeleteTopics answered {code}: the deleted topic's offset survived into its recreation"
    );
    drop((c, b));
    rb.shutdown().unwrap();
}
