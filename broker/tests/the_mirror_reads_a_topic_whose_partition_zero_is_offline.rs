//! Bug: the mirror's own reads of a destination topic (`ensure_mirror_topic`'s read-only check,
//! `topic_overrides`) looked at partition 0 alone, as the admin paths did before. With partition
//! 0 in a data directory offline since start, a mirror topic looked writable — starting its
//! mirroring or growing it tried to mark it read-only again, which a topic with an offline
//! partition refuses, so the start or growth failed — and its overrides looked like none, so a key the source stopped
//! setting was never reset. Every partition holds the topic's config: the first loaded one
//! gives it.

use crate::common;

use common::offline_partition::{WithOfflinePartition, topic_t_with_partition_offline};
use mirrorlog_broker::broker::Broker;
use mirrorlog_broker::mirrors::BrokerTopics;
use mirrorlog_index::TopicPartition;
use mirrorlog_mirror::manager::DestinationTopics;
use std::sync::Arc;

/// Topic `t` with `retention.ms` set and partition 0 offline since start, its loaded partition
/// marked read-only (a mirror topic: partition 0's mark is in the offline directory); the
/// broker, and the directories to keep while it runs.
fn mirror_topic_with_partition_zero_offline() -> (Arc<Broker>, impl Sized) {
    let WithOfflinePartition {
        d1,
        d2,
        sim,
        broker,
    } = topic_t_with_partition_offline(0, &[("retention.ms", "123456789")]);
    let tp = TopicPartition {
        topic: "t".into(),
        partition: 1,
    };
    let mut config = broker.partition("t", 1).unwrap().read().config().clone();
    config.read_only = true;
    broker.logs.update_config(&tp, config).unwrap();
    (Arc::new(broker), (d1, d2, sim))
}

fn shutdown(b: Arc<Broker>) {
    Arc::try_unwrap(b).ok().unwrap().shutdown().unwrap();
}

#[test]
fn its_overrides_are_the_topics() {
    let (b, _dirs) = mirror_topic_with_partition_zero_offline();
    assert_eq!(
        BrokerTopics::new(&b).topic_overrides("t"),
        vec![("retention.ms".to_string(), "123456789".to_string())]
    );
    shutdown(b);
}

#[test]
fn it_is_still_a_mirror_topic() {
    let (b, _dirs) = mirror_topic_with_partition_zero_offline();
    let id = b.topics.get("t").unwrap().id;
    BrokerTopics::new(&b)
        .ensure_mirror_topic("t", *id.as_bytes(), 2)
        .expect("the mirror topic is already one");
    assert!(b.partition("t", 1).unwrap().read().is_read_only());
    shutdown(b);
}
