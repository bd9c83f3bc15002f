//! Kafka's KRaft controller takes CreateTopics' and CreatePartitions' `timeout_ms` as the
//! deadline of the request's write event (`ControllerApis`: `requestTimeoutMsToDeadlineNs`), and
//! its event queue (`KafkaEventQueue`) fails an event whose deadline has passed before running
//! it: with `timeout_ms` 0 or less, a request that reaches the controller (one naming a topic
//! once, other than `__cluster_metadata`) fails whole — every entry `REQUEST_TIMED_OUT`
//! (`getErrorResponse`), validate_only or not, and nothing is created or grown. A request of
//! only duplicates (or only `__cluster_metadata`) never reaches it and is answered as always.
//! mirrorlog ignored `timeout_ms`.

use crate::common;

use common::wire::create_topics as create;
use kafka_protocol::ResponseError as E;
use kafka_protocol::messages::create_partitions_request::CreatePartitionsTopic;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use std::net::SocketAddr;

const TIMED_OUT: i16 = 7;

fn grow(addr: SocketAddr, names: &[&str], count: i32, timeout_ms: i32) -> Vec<(String, i16)> {
    let mut r = CreatePartitionsRequest::default();
    r.timeout_ms = timeout_ms;
    r.topics = names
        .iter()
        .map(|n| {
            let mut t = CreatePartitionsTopic::default();
            t.name = TopicName(StrBytes::from_string(n.to_string()));
            t.count = count;
            t.assignments = None;
            t
        })
        .collect();
    let resp: CreatePartitionsResponse = common::wire::call(addr, ApiKey::CreatePartitions, 3, &r);
    resp.results
        .iter()
        .map(|t| (t.name.0.to_string(), t.error_code))
        .collect()
}

fn all(names: &[&str], code: i16) -> Vec<(String, i16)> {
    names.iter().map(|n| (n.to_string(), code)).collect()
}

#[test]
fn no_time_left_times_the_whole_request_out_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let running = common::produce::running_with_topic(dir.path(), "g", 1);
    let b = &running.broker;
    let addr = running.addr;

    // Every entry, duplicates and an existing topic included.
    let names = ["new", "dup", "dup", "g"];
    assert_eq!(create(addr, &names, 0, false), all(&names, TIMED_OUT));
    assert_eq!(create(addr, &["new"], -1, true), all(&["new"], TIMED_OUT));
    assert!(b.topics.get("new").is_none() && b.topics.get("dup").is_none());

    // Nothing reaches the controller: answered as always.
    assert_eq!(
        create(addr, &["dup", "dup"], 0, false),
        all(&["dup"], E::InvalidRequest.code())
    );
    assert_eq!(
        create(addr, &["__cluster_metadata"], 0, false),
        all(&["__cluster_metadata"], E::InvalidRequest.code())
    );

    let names = ["g", "unknown"];
    assert_eq!(grow(addr, &names, 2, 0), all(&names, TIMED_OUT));
    assert_eq!(b.topics.get("g").unwrap().partitions, 1);
    assert_eq!(
        grow(addr, &["g", "g"], 2, -5),
        all(&["g"], E::InvalidRequest.code())
    );

    // Time left: created and grown.
    assert_eq!(create(addr, &["new"], 1, false), all(&["new"], 0));
    assert_eq!(grow(addr, &["g"], 2, 30_000), all(&["g"], 0));
    assert_eq!(b.topics.get("g").unwrap().partitions, 2);
    running.shutdown().unwrap();
}
