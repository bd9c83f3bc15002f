//! Kafka's controller (`ReplicationControlManager.createTopics`, `validateNewTopicNames`) checks
//! each requested name for a collision ('.' and '_' alike) against the topics that existed
//! before the request only (`topicsWithCollisionChars`, updated when the request's records are
//! replayed), so one request naming `a.b` and `a_b` creates both. mirrorlog created them one
//! after the other and refused the second as colliding with the first. A name colliding with a
//! topic that existed before the request is still refused, and a later request still sees the
//! topics this one created.

use crate::common;

use kafka_protocol::ResponseError as E;
use std::net::SocketAddr;

fn create(addr: SocketAddr, names: &[&str]) -> Vec<(String, i16)> {
    common::wire::create_topics(addr, names, 30_000, false)
}

#[test]
fn two_colliding_names_of_one_request_are_both_created() {
    let dir = tempfile::tempdir().unwrap();
    let running = common::produce::running_with_topic(dir.path(), "x.y", 1);
    let b = &running.broker;

    let got = create(running.addr, &["a.b", "a_b", "x_y"]);
    let want = vec![
        ("a.b".to_string(), 0),
        ("a_b".to_string(), 0),
        // Collides with a topic that existed before the request.
        ("x_y".to_string(), E::InvalidTopicException.code()),
    ];
    assert_eq!(got, want);
    assert!(b.topics.get("a.b").is_some() && b.topics.get("a_b").is_some());
    assert!(b.topics.get("x_y").is_none());

    // The next request sees them.
    let got = create(running.addr, &["a-b", "a.b_"]);
    assert_eq!(got, vec![("a-b".to_string(), 0), ("a.b_".to_string(), 0)]);
    let got = create(running.addr, &["a_b_"]);
    assert_eq!(
        got,
        vec![("a_b_".to_string(), E::InvalidTopicException.code())]
    );
    running.shutdown().unwrap();
}
