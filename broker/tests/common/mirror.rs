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

/// A mirror topic no mirror restored, for the offline-`__mirror_state` scenarios.
pub struct OfflineStateTopic {
    /// The source broker.
    pub src: RunningBroker,
    /// The destination, reopened with `bad` offline.
    pub dst: Arc<Broker>,
    /// The topic whose only partition's state is in `bad`, its log in the other dir.
    pub topic: String,
    /// The data dir offline at the reopen.
    pub bad: std::path::PathBuf,
    /// The mirrored topics whose log and state were both outside `bad`: restored as before.
    pub kept: Vec<String>,
}

/// Eight one-partition topics `orders-i` (fixed ids, topic configs `config`) on a source,
/// started by name on durable mirror `mirror` of a destination on data dirs `root/d1` and
/// `root/d2` over `sim`; once `mirrored` holds, the destination is closed and reopened with
/// the data dir holding the `__mirror_state` partition of a topic whose log is in the other
/// dir offline at start (`ListDir` of that partition fails), so that topic is not restored.
pub fn mirror_topic_whose_states_are_offline(
    root: &Path,
    sim: &Arc<mirrorlog_segment::io::SimStorage>,
    mirror: &str,
    config: &mirrorlog_engine::config::LogConfig,
    mirrored: impl Fn(&Broker) -> bool,
) -> OfflineStateTopic {
    use mirrorlog_index::TopicPartition;
    use mirrorlog_segment::io::{Fault, FaultKind, IoOp};
    let (d1, d2) = (root.join("d1"), root.join("d2"));
    let src = RunningBroker::start_local(&root.join("src"), 1).unwrap();
    // Fixed (scrambled) topic ids: where each state lives is the same every run.
    let id = |i: u128| i.wrapping_mul(0x9E37_79B9_7F4A_7C15_F39C_C060_5CED_C835);
    let topics: Vec<(String, [u8; 16])> = (0..8u128)
        .map(|i| {
            let uuid = uuid::Uuid::from_u128(id(i + 1));
            let name = format!("orders-{i}");
            src.broker
                .topics
                .create(&src.broker.logs, &name, 1, config.clone(), Some(uuid))
                .unwrap();
            (name, *uuid.as_bytes())
        })
        .collect();

    let (b, _) = open_mirror_destination(&d1, &d2, sim);
    let configs = BTreeMap::from([("bootstrap.servers".to_string(), src.addr.to_string())]);
    b.mirrors.create_durable(&b, mirror, configs).unwrap();
    let names: Vec<String> = topics.iter().map(|(name, _)| name.clone()).collect();
    let r = start_topics(&b, mirror, &names);
    assert!(r.topics.iter().all(|t| t.error_code == 0), "{r:?}");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !mirrored(&b) {
        assert!(std::time::Instant::now() < deadline, "not mirrored");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let tp = |topic: &str, partition| TopicPartition {
        topic: topic.into(),
        partition,
    };
    // A topic whose log and state partition are in different dirs: fail the state's.
    let state_tp = |id: &[u8; 16]| {
        let p = mirrorlog_mirror::state::state_partition_for(
            mirror,
            id,
            0,
            mirrorlog_broker::mirrors::MIRROR_STATE_PARTITIONS,
        );
        tp("__mirror_state", p)
    };
    let dir_of =
        |t: &TopicPartition| -> std::path::PathBuf { b.logs.get(t).unwrap().data_dir().into() };
    let (topic, topic_id) = topics
        .iter()
        .find(|(name, id)| dir_of(&state_tp(id)) != dir_of(&tp(name, 0)))
        .cloned()
        .expect("a topic with its state in the other dir");
    let bad = dir_of(&state_tp(&topic_id));
    let kept = topics
        .iter()
        .filter(|(name, id)| dir_of(&state_tp(id)) != bad && dir_of(&tp(name, 0)) != bad)
        .map(|(name, _)| name.clone())
        .collect();
    super::two_dir_broker::close(b);

    let fault = bad.join(state_tp(&topic_id).to_string());
    sim.inject(Fault::new(IoOp::ListDir, FaultKind::Eio).on_path(fault.to_str().unwrap()));
    let (dst, _) = open_mirror_destination(&d1, &d2, sim);
    assert!(dst.logs.offline_dirs().iter().any(|(p, _)| *p == bad));
    assert!(
        dst.mirrors.topic_owner(&topic).is_none(),
        "the scenario needs a mirror topic no mirror restored"
    );
    assert!(dst.logs.get(&tp(&topic, 0)).unwrap().read().is_read_only());
    OfflineStateTopic {
        src,
        dst,
        topic,
        bad,
        kept,
    }
}
