//! A source partition's leader moves to another node: the old leader answers a fetch
//! NOT_LEADER_OR_FOLLOWER (or, gone, does not answer at all). Kafka's consumer asks for metadata
//! at once and fetches from the new leader; the mirror did the same only at its next periodic
//! sync (`metadata.refresh.interval.ms`, up to an hour), asking the old leader again every round
//! meanwhile. Driven by hand, one fetch round at a time: nothing here is timed.

mod common;

use common::{Dest, T0, manager, orders, produce_to};
use mirrorlog_engine::clock::ManualClock;
use mirrorlog_engine::config::LogConfig;
use mirrorlog_index::{LeaderEpoch, Offset, TopicId};
use mirrorlog_mirror::engine_source::EngineSource;
use mirrorlog_mirror::manager::{MirrorConfig, MirrorManager};
use mirrorlog_mirror::source::*;
use mirrorlog_mirror::state::{MirrorPartitionState as S, MirrorStateStore};
use parking_lot::Mutex;
use std::sync::Arc;

const NOT_LEADER_OR_FOLLOWER: i16 = 6;

/// How the node that lost the leadership answers.
#[derive(Debug, Clone, Copy)]
enum OldLeader {
    NotLeader,
    Down,
}

/// A two-node source over one engine: metadata names `leader` (at `epoch`), and only that node
/// serves fetches.
#[derive(Debug)]
struct TwoNodes {
    inner: Arc<EngineSource>,
    /// (leader, epoch, how the other node answers).
    leader: Mutex<(i32, i32, OldLeader)>,
    /// Nodes fetched from, in order.
    fetched_from: Mutex<Vec<i32>>,
}

impl SourceCluster for TwoNodes {
    fn metadata(&self, topics: Option<&[String]>) -> Result<SourceMetadata, SourceError> {
        let mut m = self.inner.metadata(topics)?;
        let (leader, epoch, _) = *self.leader.lock();
        m.nodes = [1, 2]
            .map(|id| SourceNode {
                id,
                host: "127.0.0.1".into(),
                port: 9090 + id,
            })
            .to_vec();
        for p in m.topics.iter_mut().flat_map(|t| t.partitions.iter_mut()) {
            p.leader = leader;
            p.leader_epoch = LeaderEpoch(epoch);
        }
        Ok(m)
    }
    fn fetch(&self, node: i32, request: &FetchRequest) -> Result<FetchResponse, SourceError> {
        self.fetched_from.lock().push(node);
        let (leader, _, old) = *self.leader.lock();
        if node == leader {
            return self.inner.fetch(1, request);
        }
        match old {
            OldLeader::Down => Err(SourceError::Unreachable(format!(
                "connecting to node {node}: refused"
            ))),
            OldLeader::NotLeader => Ok(FetchResponse {
                error: 0,
                partitions: request
                    .partitions
                    .iter()
                    .map(|p| PartitionData {
                        topic: p.topic.clone(),
                        partition: p.partition,
                        error: NOT_LEADER_OR_FOLLOWER,
                        high_watermark: Offset(-1),
                        log_start_offset: Offset(-1),
                        diverging_epoch: None,
                        records: Default::default(),
                    })
                    .collect(),
            }),
        }
    }
    fn list_offset(
        &self,
        topic: &str,
        partition: i32,
        spec: OffsetSpec,
    ) -> Result<(Offset, LeaderEpoch), SourceError> {
        self.inner.list_offset(topic, partition, spec)
    }
    fn end_offset_for_epoch(
        &self,
        topic: &str,
        partition: i32,
        epoch: LeaderEpoch,
    ) -> Result<(LeaderEpoch, Offset), SourceError> {
        self.inner.end_offset_for_epoch(topic, partition, epoch)
    }
    fn topic_configs(&self, topic: &str) -> Result<Vec<(String, String)>, SourceError> {
        self.inner.topic_configs(topic)
    }
    fn list_groups(&self) -> Result<Vec<GroupListing>, SourceError> {
        self.inner.list_groups()
    }
    fn committed_offsets(&self, group_id: &str) -> Result<Vec<CommittedOffset>, SourceError> {
        self.inner.committed_offsets(group_id)
    }
}

fn leader_moves(old: OldLeader) {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (src, dst) = (manager(a.path()), manager(b.path()));
    src.create(&orders(0), TopicId([1; 16]), LogConfig::default())
        .unwrap();
    produce_to(&src, &orders(0), b"v", 3);
    let source = Arc::new(TwoNodes {
        inner: EngineSource::new(src.clone(), "source-cluster", 1),
        leader: Mutex::new((1, 0, old)),
        fetched_from: Mutex::new(vec![]),
    });
    let store = Arc::new(MirrorStateStore::open(dst.clone(), 4).unwrap());
    let mirror = MirrorManager::new(
        MirrorConfig::new("m"),
        source.clone(),
        dst.clone(),
        Arc::new(Dest(dst.clone())),
        store,
        ManualClock::new(T0),
    )
    .unwrap();
    mirror.start_topics(&["orders".to_string()]).unwrap();
    mirror.drive();
    mirror.fetch_round(0);
    assert_eq!(mirror.describe()[0].log_end_offset, Offset(3));

    // The leadership moves to node 2; no sync runs from here on.
    produce_to(&src, &orders(0), b"w", 2);
    *source.leader.lock() = (2, 1, old);
    source.fetched_from.lock().clear();
    mirror.fetch_round(0);
    mirror.fetch_round(0);
    let s = mirror.describe().remove(0);
    assert_eq!(
        (s.state, s.log_end_offset),
        (S::Mirroring, Offset(5)),
        "{:?}",
        s.failure
    );
    assert_eq!(
        *source.fetched_from.lock(),
        [1, 2],
        "the old leader is asked once"
    );
}

#[test]
fn a_not_leader_answer_sends_the_next_fetch_to_the_new_leader() {
    leader_moves(OldLeader::NotLeader);
}

#[test]
fn an_old_leader_that_does_not_answer_sends_the_next_fetch_to_the_new_leader() {
    leader_moves(OldLeader::Down);
}
