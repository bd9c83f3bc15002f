//! Two brokers on 127.0.0.1 for the cluster-mirror scenarios: a source with topic `orders` and
//! a destination with durable mirrors of it, and the StartMirrorTopics / StopMirrorTopics calls
//! on `orders` those scenarios make.

use mirrorlog_broker::broker::Broker;
use mirrorlog_broker::client::Client;
use mirrorlog_broker::handlers::mirror_admin::handle;
use mirrorlog_broker::mirror_rpc::{
    MirrorRequest, MirrorResponse, MirrorTopicsRequest, MirrorTopicsResponse,
    StartMirrorTopicsRequest, StartTopic, TopicName,
};
use mirrorlog_broker::running::RunningBroker;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

/// A source broker (node 1) holding topic `orders` with one partition, and a destination
/// (node 2) with one durable cluster mirror of it per name in `mirrors`.
pub fn source_and_destination(dir: &Path, mirrors: &[&str]) -> (RunningBroker, RunningBroker) {
    source_and_destination_with(dir, mirrors, &[])
}

/// [`source_and_destination`] with `orders` created on the source with topic configs
/// `configs`.
pub fn source_and_destination_with(
    dir: &Path,
    mirrors: &[&str],
    configs: &[(&str, &str)],
) -> (RunningBroker, RunningBroker) {
    let src = RunningBroker::start_local(&dir.join("src"), 1).unwrap();
    Client::connect(&src.addr.to_string())
        .unwrap()
        .create_topic("orders", 1, configs)
        .unwrap();
    let dst = RunningBroker::start_local(&dir.join("dst"), 2).unwrap();
    let b = dst.broker.clone();
    for name in mirrors {
        let configs = BTreeMap::from([("bootstrap.servers".to_string(), src.addr.to_string())]);
        b.mirrors.create_durable(&b, name, configs).unwrap();
    }
    (src, dst)
}

/// A destination broker (node 2, cluster `dst`, system clock) on data dirs `d1` and `d2` over
/// `sim`, with its coordinators installed and its mirrors restored: the broker and how many
/// mirror partitions were restored.
pub fn open_mirror_destination(
    d1: &Path,
    d2: &Path,
    sim: &Arc<mirrorlog_segment::io::SimStorage>,
) -> (Arc<Broker>, usize) {
    let mut config = mirrorlog_broker::broker::BrokerConfig::new(d1, "127.0.0.1", 9092);
    config.node_id = 2;
    config.cluster_id = Some("dst".into());
    config.logs.data_dirs = vec![d1.to_path_buf(), d2.to_path_buf()];
    config.logs.recovery_threads = 1;
    let clock = Arc::new(mirrorlog_engine::clock::SystemClock);
    let b = Arc::new(Broker::open(config, sim.clone(), clock).unwrap());
    b.register_arc();
    mirrorlog_broker::coordinators::install(&b).unwrap();
    let restored = b.mirrors.restore(&b).unwrap();
    (b, restored)
}

/// StartMirrorTopics of `orders` by name on `mirror`: the topic's error code.
pub fn start_orders(b: &Arc<Broker>, mirror: &str) -> i16 {
    only_topic_code(&start_topics(b, mirror, &["orders".to_string()]))
}

/// StartMirrorTopics of `topics` by name (all their partitions) on `mirror`: the answer.
pub fn start_topics(b: &Arc<Broker>, mirror: &str, topics: &[String]) -> MirrorTopicsResponse {
    let r = handle(
        b,
        MirrorRequest::StartMirrorTopics(StartMirrorTopicsRequest {
            mirror_name: mirror.into(),
            topics: topics
                .iter()
                .map(|t| StartTopic {
                    name: t.clone(),
                    topic_id: [0; 16],
                    num_partitions: -1,
                })
                .collect(),
            timeout_ms: 30_000,
            ..Default::default()
        }),
    );
    match r {
        MirrorResponse::StartMirrorTopics(r) => r,
        other => panic!("{other:?}"),
    }
}

/// StopMirrorTopics of `orders` on `mirror`: the topic's error code.
pub fn stop_orders(b: &Arc<Broker>, mirror: &str) -> i16 {
    let r = handle(
        b,
        MirrorRequest::StopMirrorTopics(MirrorTopicsRequest {
            mirror_name: mirror.into(),
            topics: vec![TopicName {
                name: "orders".into(),
            }],
            state_offset: -1,
            ..Default::default()
        }),
    );
    match r {
        MirrorResponse::StopMirrorTopics(r) => only_topic_code(&r),
        other => panic!("{other:?}"),
    }
}

/// The one topic's error code of an answer without a top-level error.
pub fn only_topic_code(r: &MirrorTopicsResponse) -> i16 {
    assert_eq!(r.error_code, 0, "{r:?}");
    assert_eq!(r.topics.len(), 1, "{r:?}");
    r.topics[0].error_code
}
