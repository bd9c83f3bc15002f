//! Bug: with a `__mirror_state` partition in a data directory that went offline while loading,
//! `MirrorStateStore::open` failed (it could neither load nor create the partition), so no
//! cluster mirror of the broker was restored: every mirror was gone until the disk was
//! repaired, those whose states were all online included. Now the store opens without that
//! partition and refuses writes to the keys it holds; the mirror's partitions whose state is
//! there are not restored — FAILED (in memory only), naming the offline directory, read-only,
//! nothing appended — and start/stop/pause/resume/recover of their topic answer
//! KAFKA_STORAGE_ERROR instead of writing state. Every other partition mirrors as before, and
//! the next start with the directory repaired restores the unavailable ones as they were.

use crate::common;

use common::mirror::{open_mirror_destination as open_dst, start_topics};
use common::two_dir_broker::close;
use kafka_protocol::ResponseError as E;
use mirrorlog_broker::broker::Broker;
use mirrorlog_broker::client::Client;
use mirrorlog_broker::handlers::mirror_admin::handle;
use mirrorlog_broker::mirror_rpc::{
    DeleteClusterMirrorRequest, MirrorRequest, MirrorResponse, MirrorTopicsRequest, TopicName,
};
use mirrorlog_broker::mirrors::MIRROR_STATE_PARTITIONS;
use mirrorlog_broker::running::RunningBroker;
use mirrorlog_engine::config::LogConfig;
use mirrorlog_index::{Offset, TimestampMs, TopicPartition};
use mirrorlog_mirror::state::{MirrorPartitionState as S, state_partition_for};
use mirrorlog_segment::BatchBuilder;
use mirrorlog_segment::io::{Fault, FaultKind, IoOp, SimStorage};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

const MIRROR: &str = "m";
const ORDERS: u128 = 4;
const AUDITS: u128 = 8;
const PARTITIONS: usize = (ORDERS * 4 + AUDITS) as usize;

fn tp(topic: &str, partition: i32) -> TopicPartition {
    TopicPartition {
        topic: topic.into(),
        partition,
    }
}

/// Waits (bounded) until `cond` holds on the mirror's partition states.
fn wait_for(b: &Broker, what: &str, cond: impl Fn(&BTreeMap<TopicPartition, S>) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let m = b.mirrors.get(MIRROR).expect("the mirror exists");
        let states: BTreeMap<_, _> = m
            .describe()
            .into_iter()
            .map(|p| (tp(&p.topic, p.partition), p.state))
            .collect();
        if cond(&states) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {what}: {states:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn leo(b: &Broker, t: &TopicPartition) -> Offset {
    b.logs.get(t).unwrap().read().log_end_offset()
}

fn start(b: &Arc<Broker>, topics: &[String]) -> Vec<i16> {
    let r = start_topics(b, MIRROR, topics);
    assert_eq!(r.error_code, 0, "{r:?}");
    r.topics.iter().map(|t| t.error_code).collect()
}

/// Stop, pause, resume or recover of `topic`: its error code and message.
fn act(b: &Arc<Broker>, action: &str, topic: &str) -> (i16, String) {
    let req = MirrorTopicsRequest {
        mirror_name: MIRROR.into(),
        topics: vec![TopicName { name: topic.into() }],
        state_offset: -1,
        ..Default::default()
    };
    let r = handle(
        b,
        match action {
            "stop" => MirrorRequest::StopMirrorTopics(req),
            "pause" => MirrorRequest::PauseMirrorTopics(req),
            "resume" => MirrorRequest::ResumeMirrorTopics(req),
            _ => MirrorRequest::RecoverMirrorTopics(req),
        },
    );
    let r = match r {
        MirrorResponse::StopMirrorTopics(r)
        | MirrorResponse::PauseMirrorTopics(r)
        | MirrorResponse::ResumeMirrorTopics(r)
        | MirrorResponse::RecoverMirrorTopics(r) => r,
        other => panic!("{other:?}"),
    };
    assert_eq!(r.error_code, 0, "{r:?}");
    (
        r.topics[0].error_code,
        r.topics[0].error_message.clone().unwrap_or_default(),
    )
}

/// DeleteClusterMirror: its error code.
fn delete(b: &Arc<Broker>, name: &str) -> i16 {
    let r = handle(
        b,
        MirrorRequest::DeleteClusterMirror(DeleteClusterMirrorRequest {
            mirror_name: name.into(),
            state_offset: -1,
        }),
    );
    let MirrorResponse::DeleteClusterMirror(r) = r else {
        panic!("{r:?}")
    };
    r.error_code
}

fn produce(src: &RunningBroker, t: &TopicPartition) {
    let mut batch = BatchBuilder::new();
    batch.append(TimestampMs(1_700_000_000_000), None, Some(b"v"), &[]);
    Client::connect(&src.addr.to_string())
        .unwrap()
        .produce(&t.topic, t.partition, batch.build().into_bytes(), 1, None)
        .unwrap();
}

#[test]
fn a_mirror_state_partition_in_an_offline_dir_fails_only_the_partitions_it_holds() {
    let root = tempfile::tempdir().unwrap();
    let (d1, d2) = (root.path().join("d1"), root.path().join("d2"));
    let sim = Arc::new(SimStorage::new());
    let src = RunningBroker::start_local(&root.path().join("src"), 1).unwrap();
    // Fixed (scrambled) topic ids: where each mirror partition's state lives is the same every
    // run, and varied enough to find the partitions the test needs.
    let id = |i: u128| i.wrapping_mul(0x9E37_79B9_7F4A_7C15_F39C_C060_5CED_C835);
    let mut topics: Vec<(String, i32, u128)> = (0..ORDERS)
        .map(|i| (format!("orders-{i}"), 4, id(i + 1)))
        .collect();
    topics.extend((0..AUDITS).map(|i| (format!("audit-{i}"), 1, id(100 + i))));
    for (name, partitions, id) in &topics {
        src.broker
            .topics
            .create(
                &src.broker.logs,
                name,
                *partitions,
                LogConfig::default(),
                Some(uuid::Uuid::from_u128(*id)),
            )
            .unwrap();
    }
    let id_of = |name: &str| {
        let (_, _, id) = topics.iter().find(|(n, _, _)| n == name).unwrap();
        *uuid::Uuid::from_u128(*id).as_bytes()
    };

    let (b, _) = open_dst(&d1, &d2, &sim);
    let configs = BTreeMap::from([("bootstrap.servers".to_string(), src.addr.to_string())]);
    b.mirrors
        .create_durable(&b, MIRROR, configs.clone())
        .unwrap();
    // A mirror without topics: whether it had states in the partition that goes offline is
    // unknown then, so it cannot be deleted meanwhile (its states there would outlive it).
    b.mirrors.create_durable(&b, "idle", configs).unwrap();
    let names: Vec<String> = topics.iter().map(|(n, _, _)| n.clone()).collect();
    assert!(start(&b, &names).iter().all(|c| *c == 0));
    wait_for(&b, "every partition MIRRORING", |s| {
        s.len() == PARTITIONS && s.values().all(|s| *s == S::Mirroring)
    });
    let state_tp = |t: &TopicPartition| {
        tp(
            "__mirror_state",
            state_partition_for(
                MIRROR,
                &id_of(&t.topic),
                t.partition,
                MIRROR_STATE_PARTITIONS,
            ),
        )
    };
    let dir_of = |b: &Broker, t: &TopicPartition| -> PathBuf {
        b.logs.get(t).unwrap().data_dir().to_path_buf()
    };
    // The dir to fail, with an orders partition whose state is there but whose log is not (to
    // see that nothing is appended), and an audit topic with its state and log in the other
    // dir (to see it mirror on).
    let pick = |bad: &Path| {
        let stuck = (0..ORDERS)
            .flat_map(|i| (0..4).map(move |p| tp(&format!("orders-{i}"), p)))
            .find(|t| dir_of(&b, &state_tp(t)) == bad && dir_of(&b, t) != bad)?;
        let healthy = (0..AUDITS)
            .map(|i| tp(&format!("audit-{i}"), 0))
            .find(|t| dir_of(&b, &state_tp(t)) != bad && dir_of(&b, t) != bad)?;
        Some((bad.to_path_buf(), stuck, healthy))
    };
    let (bad, stuck, healthy) = pick(&d1)
        .or_else(|| pick(&d2))
        .expect("a dir to fail with such partitions");
    let stuck_topic = stuck.topic.clone();
    let unavailable: Vec<TopicPartition> = (0..4)
        .map(|p| tp(&stuck_topic, p))
        .filter(|t| dir_of(&b, &state_tp(t)) == bad)
        .collect();
    close(b);

    let fault = bad.join(state_tp(&stuck).to_string());
    sim.inject(Fault::new(IoOp::ListDir, FaultKind::Eio).on_path(fault.to_str().unwrap()));
    let (b, restored) = open_dst(&d1, &d2, &sim);
    assert!(b.logs.offline_dirs().iter().any(|(p, _)| *p == bad));
    assert_eq!(
        restored, 2,
        "the mirrors are restored with a __mirror_state partition offline"
    );
    assert!(
        !root
            .path()
            .join(if bad == d1 { "d2" } else { "d1" })
            .join(state_tp(&stuck).to_string())
            .exists()
    );

    let m = b.mirrors.get(MIRROR).unwrap();
    let status: BTreeMap<TopicPartition, _> = m
        .describe()
        .into_iter()
        .map(|p| (tp(&p.topic, p.partition), p))
        .collect();
    for t in &unavailable {
        let p = &status[t];
        assert_eq!(p.state, S::Failed, "{t}");
        let reason = p.failure.clone().unwrap_or_default();
        assert!(
            reason.contains(bad.to_str().unwrap()),
            "{t}: the reason names the offline dir: {reason}"
        );
        assert_eq!(p.retry_attempt, -1, "not retried");
    }
    // Operator actions on the topic: the storage error, nothing written.
    for action in ["stop", "pause", "resume", "recover"] {
        let (code, message) = act(&b, action, &stuck_topic);
        assert_eq!(code, E::KafkaStorageError.code(), "{action}: {message}");
    }
    assert_eq!(
        start(&b, std::slice::from_ref(&stuck_topic)),
        vec![E::KafkaStorageError.code()]
    );

    assert_eq!(delete(&b, "idle"), E::KafkaStorageError.code());

    // The source moves on: the healthy topic mirrors it, the unavailable partition does not.
    let stuck_leo = leo(&b, &stuck);
    let healthy_leo = leo(&b, &healthy);
    produce(&src, &stuck);
    produce(&src, &healthy);
    let deadline = Instant::now() + Duration::from_secs(60);
    while leo(&b, &healthy) == healthy_leo {
        assert!(
            Instant::now() < deadline,
            "{healthy} is not mirrored any more"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(status[&healthy].state, S::Mirroring);
    assert!(b.logs.get(&stuck).unwrap().read().is_read_only());
    assert_eq!(leo(&b, &stuck), stuck_leo, "nothing appended to {stuck}");
    drop(m);
    close(b);

    // Repaired: the partitions come back in their stored state and catch up.
    let (b, restored) = open_dst(&d1, &d2, &sim);
    assert!(b.logs.offline_dirs().is_empty());
    assert_eq!(restored, 2);
    assert_eq!(delete(&b, "idle"), 0, "deleted once every state is known");
    wait_for(&b, "every partition MIRRORING after the repair", |s| {
        s.len() == PARTITIONS && s.values().all(|s| *s == S::Mirroring)
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    while leo(&b, &stuck) == stuck_leo {
        assert!(
            Instant::now() < deadline,
            "{stuck} does not catch up after the repair"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    close(b);
    drop(src);
}
