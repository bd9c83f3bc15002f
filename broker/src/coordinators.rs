//! Wiring the group and transaction coordinators into a broker: each is adapted to the
//! [`Coordinator`] trait the dispatcher routes by API key, and the group coordinator is the
//! transaction coordinator's sink for transactional offset commits.

use crate::broker::{Broker, Coordinator, Wakes};
use crate::group::{ClientInfo, GroupCoordinator};
use crate::server::RequestContext;
use crate::txn::{TxnCoordinator, TxnOffsetsSink};
use kafka_protocol::messages::{ApiKey, RequestKind, ResponseKind};
use std::sync::Arc;

struct Groups(Arc<GroupCoordinator>);

impl Coordinator for Groups {
    fn apis(&self) -> Vec<ApiKey> {
        vec![
            ApiKey::JoinGroup,
            ApiKey::SyncGroup,
            ApiKey::Heartbeat,
            ApiKey::LeaveGroup,
            ApiKey::OffsetCommit,
            ApiKey::OffsetFetch,
            ApiKey::ListGroups,
            ApiKey::DescribeGroups,
            ApiKey::DeleteGroups,
            ApiKey::TxnOffsetCommit,
            ApiKey::OffsetDelete,
        ]
    }
    fn supported_versions(&self, api: ApiKey) -> Option<(i16, i16)> {
        GroupCoordinator::supported_versions(api)
    }
    fn handle(&self, ctx: &RequestContext, request: RequestKind) -> ResponseKind {
        let client = ClientInfo {
            client_id: ctx.client_id.clone().unwrap_or_default(),
            client_host: format!("/{}", ctx.peer.ip()),
        };
        self.0.handle_from(&client, ctx.api_version, request)
    }
    fn wakes(&self, _api: ApiKey) -> Wakes {
        // Every write to `__consumer_offsets` wakes the long polls on the partition it went to
        // as it is made (the write hook `install` sets), whoever made it: a request, the tick,
        // a mirror's group commit. A Heartbeat, OffsetFetch, ListGroups or DescribeGroups
        // writes nothing and wakes nobody.
        Wakes::Nobody
    }
    fn tick(&self, now_ms: i64) -> bool {
        // Its writes (session timeouts, offset expiry, compaction) woke their partitions' long
        // polls through the write hook.
        self.0.tick(now_ms);
        false
    }
    fn shutdown(&self) {
        self.0.shutdown();
    }
    fn topic_deleted(&self, topic: &str) {
        self.0.on_topic_deleted(topic);
    }
    fn find_error(&self, key_type: i8, key: &str) -> Option<i16> {
        // Kafka's FindCoordinator for a group whose offsets partition has no leader (here: its
        // data directory is offline).
        (key_type == 0 && !self.0.serves(key))
            .then_some(kafka_protocol::ResponseError::CoordinatorNotAvailable.code())
    }
}

struct Txns(Arc<TxnCoordinator>);

impl Coordinator for Txns {
    fn apis(&self) -> Vec<ApiKey> {
        vec![
            ApiKey::InitProducerId,
            ApiKey::AddPartitionsToTxn,
            ApiKey::AddOffsetsToTxn,
            ApiKey::EndTxn,
            ApiKey::DescribeTransactions,
            ApiKey::ListTransactions,
            ApiKey::WriteTxnMarkers,
        ]
    }
    fn supported_versions(&self, api: ApiKey) -> Option<(i16, i16)> {
        TxnCoordinator::supported_versions(api)
    }
    fn handle(&self, ctx: &RequestContext, request: RequestKind) -> ResponseKind {
        self.0.handle(ctx.api_version, request)
    }
    fn wakes(&self, _api: ApiKey) -> Wakes {
        // Every write wakes the long polls on the partition it went to as it is made (the
        // hooks `install` sets), whoever made it, a request or the tick: a state to its
        // `__transaction_state` partition, a marker to its partition. DescribeTransactions and
        // ListTransactions write nothing and wake nobody.
        Wakes::Nobody
    }
    fn tick(&self, _now_ms: i64) -> bool {
        // Its writes (timeout aborts, expiries, retried completions, rewrites) woke their
        // partitions' long polls through the hooks.
        self.0.tick();
        false
    }
    fn find_error(&self, key_type: i8, key: &str) -> Option<i16> {
        // Kafka's FindCoordinator for a transaction state partition without a leader.
        (key_type == 1 && !self.0.serves(key))
            .then_some(kafka_protocol::ResponseError::CoordinatorNotAvailable.code())
    }
}

/// The group coordinator as the transaction coordinator's offsets sink.
struct GroupSink(Arc<GroupCoordinator>);

impl TxnOffsetsSink for GroupSink {
    fn partition_for(&self, group_id: &str) -> i32 {
        self.0.partition_for(group_id)
    }
    fn complete_txn(
        &self,
        producer_id: i64,
        producer_epoch: i16,
        commit: bool,
        partitions: &[i32],
    ) {
        self.0
            .complete_txn(producer_id, producer_epoch, commit, partitions);
    }
}

/// The group coordinator as the mirrors' group offset sink (KIP-1279 §11): an admin-style
/// OffsetCommit (generation −1, no member), which the coordinator's commit clamp bounds again.
struct MirrorGroupSink(Arc<GroupCoordinator>);

impl mirrorlog_mirror::group_sync::GroupOffsetsSink for MirrorGroupSink {
    fn is_group_active(&self, group: &str) -> bool {
        self.0.is_group_active(group)
    }

    fn has_consumer_group(&self, group: &str) -> bool {
        self.0.group_snapshot(group).is_some()
    }

    fn committed(
        &self,
        group: &str,
        tp: &mirrorlog_index::TopicPartition,
    ) -> Option<(
        mirrorlog_index::Offset,
        mirrorlog_index::LeaderEpoch,
        String,
    )> {
        use kafka_protocol::messages::offset_fetch_request::OffsetFetchRequestTopic;
        use kafka_protocol::messages::{GroupId, OffsetFetchRequest, TopicName};
        use kafka_protocol::protocol::StrBytes;
        let mut t = OffsetFetchRequestTopic::default();
        t.name = TopicName(StrBytes::from_string(tp.topic.clone()));
        t.partition_indexes = vec![tp.partition];
        let mut r = OffsetFetchRequest::default();
        r.group_id = GroupId(StrBytes::from_string(group.to_string()));
        r.topics = Some(vec![t]);
        let ResponseKind::OffsetFetch(resp) = self.0.handle(7, RequestKind::OffsetFetch(r)) else {
            return None;
        };
        let p = resp.topics.first()?.partitions.first()?;
        (resp.error_code == 0 && p.error_code == 0 && p.committed_offset >= 0).then(|| {
            (
                mirrorlog_index::Offset(p.committed_offset),
                mirrorlog_index::LeaderEpoch(p.committed_leader_epoch),
                p.metadata.as_deref().unwrap_or("").to_string(),
            )
        })
    }

    fn commit(
        &self,
        group: &str,
        tp: &mirrorlog_index::TopicPartition,
        offset: mirrorlog_index::Offset,
        leader_epoch: mirrorlog_index::LeaderEpoch,
        metadata: &str,
    ) -> Result<(), String> {
        use kafka_protocol::messages::offset_commit_request::{
            OffsetCommitRequestPartition, OffsetCommitRequestTopic,
        };
        use kafka_protocol::messages::{GroupId, OffsetCommitRequest, TopicName};
        use kafka_protocol::protocol::StrBytes;
        let mut p = OffsetCommitRequestPartition::default();
        p.partition_index = tp.partition;
        p.committed_offset = offset.get();
        p.committed_leader_epoch = leader_epoch.get();
        p.committed_metadata = Some(StrBytes::from_string(metadata.to_string()));
        let mut t = OffsetCommitRequestTopic::default();
        t.name = TopicName(StrBytes::from_string(tp.topic.clone()));
        t.partitions = vec![p];
        let mut r = OffsetCommitRequest::default();
        r.group_id = GroupId(StrBytes::from_string(group.to_string()));
        r.generation_id_or_member_epoch = -1;
        r.member_id = StrBytes::from_static_str("");
        r.topics = vec![t];
        let too_large = kafka_protocol::ResponseError::OffsetMetadataTooLarge.code();
        let code = match self.send_commit(r.clone())? {
            // The source's `offset.metadata.max.bytes` may be larger than ours: the offset is
            // what a consumer failing over needs, so it goes without the metadata.
            Some(c) if c == too_large && !metadata.is_empty() => {
                tracing::debug!(group, partition = %tp, "a synced offset's metadata is too large here; committed without it");
                r.topics[0].partitions[0].committed_metadata = Some(StrBytes::default());
                self.send_commit(r)?
            }
            code => code,
        };
        match code {
            None => Ok(()),
            Some(c) => Err(format!(
                "commit of group {group} at {tp} offset {}: {}",
                offset.get(),
                crate::errors::error_name(c)
            )),
        }
    }
}

impl MirrorGroupSink {
    /// One OffsetCommit: the first error code of its answer, `None` when it was stored.
    fn send_commit(
        &self,
        r: kafka_protocol::messages::OffsetCommitRequest,
    ) -> Result<Option<i16>, String> {
        match self.0.handle(8, RequestKind::OffsetCommit(r)) {
            ResponseKind::OffsetCommit(resp) => Ok(resp
                .topics
                .iter()
                .flat_map(|t| t.partitions.iter())
                .map(|p| p.error_code)
                .find(|c| *c != 0)),
            other => Err(format!("unexpected answer to OffsetCommit: {other:?}")),
        }
    }
}

/// Opens both coordinators on the broker's logs (loading `__consumer_offsets` and
/// `__transaction_state`, finishing transactions a crash interrupted) and registers them. The
/// group coordinator opens first: finishing a transaction may complete its offsets.
///
/// # Errors
/// A coordinator failed to load its internal topic.
pub fn install(broker: &Arc<Broker>) -> anyhow::Result<()> {
    let clock = broker.clock().clone();
    let groups = GroupCoordinator::open(
        broker.logs.clone(),
        broker.config.group.clone(),
        clock.clone(),
    )?;
    // KIP-1279 invariant 6: a commit to a mirror (read-only) partition is clamped into
    // [log start, high watermark], whoever sends it, so no path stores an offset outside the
    // log. The closure holds the log manager weakly: it must not keep it alive at shutdown.
    let logs = Arc::downgrade(&broker.logs);
    groups.set_commit_clamp(Box::new(move |tp, offset| {
        let Some(logs) = logs.upgrade() else {
            return offset;
        };
        let Some(h) = logs.get(tp) else {
            return offset;
        };
        let log = h.read();
        if !log.is_read_only() {
            return offset;
        }
        mirrorlog_mirror::group_sync::clamp_offset(
            mirrorlog_index::Offset(offset),
            log.log_start_offset(),
            log.high_watermark(),
        )
        .get()
    }));
    // Every write to `__consumer_offsets` wakes the long polls on its partition alone.
    let notifier = broker.appends.clone();
    groups.set_write_hook(Box::new(move |partition| {
        notifier.notify_partition(crate::group::OFFSETS_TOPIC, partition);
    }));
    let txns = TxnCoordinator::open(
        broker.logs.clone(),
        Arc::new(GroupSink(groups.clone())),
        clock,
        broker.config.txn.clone(),
    )?;
    // A marker wakes the long polls on its partition (READ_COMMITTED ones wait for the LSO).
    let notifier = broker.appends.clone();
    txns.set_marker_hook(Box::new(move |tp| {
        notifier.notify_partition(&tp.topic, tp.partition);
    }));
    // Every write to `__transaction_state` wakes the long polls on its partition alone.
    let notifier = broker.appends.clone();
    txns.set_state_hook(Box::new(move |partition| {
        notifier.notify_partition(crate::txn::state_log::TRANSACTION_STATE_TOPIC, partition);
    }));
    // KIP-890 part 1: transactional produce batches and TxnOffsetCommit are verified with the
    // transaction coordinator before they are written.
    broker.set_txn_verifier(txns.clone());
    let verifier: Arc<dyn crate::txn::TxnVerifier> = txns.clone();
    groups.set_txn_verifier(Arc::downgrade(&verifier));
    broker
        .mirrors
        .set_group_sink(Arc::new(MirrorGroupSink(groups.clone())));
    broker.add_coordinator(Arc::new(Groups(groups)));
    broker.add_coordinator(Arc::new(Txns(txns)));
    broker.topics.refresh(&broker.logs);
    Ok(())
}

/// A coordinator's `INT` key from `server.properties`, parsed as Kafka parses it: a 32-bit
/// decimal (surrounding whitespace ignored).
///
/// # Errors
/// `{key}={value}: not a 32-bit integer`.
pub(crate) fn int_setting(key: &str, value: &str) -> Result<i32, String> {
    value
        .trim()
        .parse()
        .map_err(|_| format!("{key}={value}: not a 32-bit integer"))
}

/// A coordinator's `LONG` key from `server.properties`: a 64-bit decimal.
///
/// # Errors
/// `{key}={value}: not a 64-bit integer`.
pub(crate) fn long_setting(key: &str, value: &str) -> Result<i64, String> {
    value
        .trim()
        .parse()
        .map_err(|_| format!("{key}={value}: not a 64-bit integer"))
}

/// An `INT` key kept unsigned here: a negative value is out of range, said by `out_of_range`
/// (as the coordinator's `validate` says it).
///
/// # Errors
/// Not a 32-bit integer, or negative.
pub(crate) fn unsigned_int_setting(
    key: &str,
    value: &str,
    out_of_range: impl FnOnce(i32) -> String,
) -> Result<u32, String> {
    let v = int_setting(key, value)?;
    u32::try_from(v).map_err(|_| out_of_range(v))
}
