//! Scenario: StartMirrorTopics on a broker whose `__mirror_state` refuses writes. The start
//! created the read-only destination topic, then failed on the state write and released the
//! claim: a read-only topic no mirror writes or owns, which clients could neither produce to
//! (READ_ONLY_TOPIC) nor get rid of through a stop. Now the failed start removes the topic it
//! created, as DeleteTopics would (KIP-1279 applies a start all at once or not at all).

use crate::common;

use common::mirror::source_and_destination;
use mirrorlog_broker::handlers::mirror_admin::handle;
use mirrorlog_broker::mirror_rpc::{
    MirrorRequest, MirrorResponse, StartMirrorTopicsRequest, StartTopic,
};
use mirrorlog_index::TopicPartition;
use mirrorlog_mirror::state::MIRROR_STATE_TOPIC;

#[test]
fn a_start_that_cannot_record_its_state_removes_the_topic_it_created() {
    let dir = tempfile::tempdir().unwrap();
    let (src, dst) = source_and_destination(dir.path(), &["east"]);
    let b = dst.broker.clone();
    // The fault: every `__mirror_state` log is gone under the mirrors' state store.
    for partition in 0..mirrorlog_broker::mirrors::MIRROR_STATE_PARTITIONS {
        b.logs
            .delete(&TopicPartition {
                topic: MIRROR_STATE_TOPIC.into(),
                partition,
            })
            .unwrap();
    }
    let r = handle(
        &b,
        MirrorRequest::StartMirrorTopics(StartMirrorTopicsRequest {
            mirror_name: "east".into(),
            topics: vec![StartTopic {
                name: "orders".into(),
                topic_id: [0; 16],
                num_partitions: -1,
            }],
            timeout_ms: 30_000,
            ..Default::default()
        }),
    );
    let MirrorResponse::StartMirrorTopics(r) = r else {
        panic!("{r:?}")
    };
    assert!(
        r.error_code != 0 || r.topics.iter().any(|t| t.error_code != 0),
        "the start cannot have succeeded: {r:?}"
    );
    assert!(
        b.topics.get("orders").is_none(),
        "the failed start left its read-only topic behind"
    );
    assert!(
        b.logs
            .get(&TopicPartition {
                topic: "orders".into(),
                partition: 0
            })
            .is_none()
    );
    assert_eq!(b.mirrors.topic_owner("orders"), None);
    drop(b);
    let _ = dst.shutdown();
    src.shutdown().unwrap();
}
