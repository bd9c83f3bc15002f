//! Bug: DeleteTopics v6 naming one topic twice, once by name and once by its id, deleted it
//! (by whichever came first) and answered the other entry unknown. Kafka's
//! `ControllerApis.deleteTopics` takes such a request as ambiguous: the name's entry is answered
//! INVALID_REQUEST, "The provided topic name maps to an ID that was already supplied.", with
//! the id, the id's entry is dropped (no answer), and the topic is left; the other entries of
//! the request are deleted as usual.

use crate::common;

use kafka_protocol::ResponseError as E;
use kafka_protocol::messages::delete_topics_request::DeleteTopicState;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;

#[test]
fn a_topic_named_by_name_and_by_id_is_not_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let running = common::produce::running_with_topic(dir.path(), "bar", 1);
    let b = &running.broker;
    b.topics
        .create(
            &b.logs,
            "other",
            1,
            b.logs.default_log_config().clone(),
            None,
        )
        .unwrap();
    let bar = b.topics.get("bar").unwrap().id;
    for id_first in [true, false] {
        let by_name = {
            let mut t = DeleteTopicState::default();
            t.name = Some(TopicName(StrBytes::from_static_str("bar")));
            t
        };
        let by_id = {
            let mut t = DeleteTopicState::default();
            t.name = None;
            t.topic_id = bar;
            t
        };
        let mut r = DeleteTopicsRequest::default();
        r.timeout_ms = 30_000;
        r.topics = if id_first {
            vec![by_id, by_name]
        } else {
            vec![by_name, by_id]
        };
        let resp: DeleteTopicsResponse =
            common::wire::call(running.addr, ApiKey::DeleteTopics, 6, &r);
        let got: Vec<(Option<String>, uuid::Uuid, i16, Option<String>)> = resp
            .responses
            .iter()
            .map(|t| {
                (
                    t.name.as_ref().map(|n| n.0.to_string()),
                    t.topic_id,
                    t.error_code,
                    t.error_message.as_ref().map(|m| m.to_string()),
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![(
                Some("bar".to_string()),
                bar,
                E::InvalidRequest.code(),
                Some("The provided topic name maps to an ID that was already supplied.".into())
            )],
            "id first: {id_first}"
        );
        assert!(b.topics.get("bar").is_some(), "id first: {id_first}");
    }
    // The rest of such a request is deleted as usual.
    let mut by_name = DeleteTopicState::default();
    by_name.name = Some(TopicName(StrBytes::from_static_str("bar")));
    let mut by_id = DeleteTopicState::default();
    by_id.topic_id = bar;
    let mut other = DeleteTopicState::default();
    other.name = Some(TopicName(StrBytes::from_static_str("other")));
    let mut r = DeleteTopicsRequest::default();
    r.timeout_ms = 30_000;
    r.topics = vec![by_name, other, by_id];
    let resp: DeleteTopicsResponse = common::wire::call(running.addr, ApiKey::DeleteTopics, 6, &r);
    let other = resp
        .responses
        .iter()
        .find(|t| t.name.as_ref().is_some_and(|n| n.0.as_str() == "other"))
        .expect("answered");
    assert_eq!(other.error_code, 0);
    assert!(b.topics.get("other").is_none());
    assert!(b.topics.get("bar").is_some());
}
