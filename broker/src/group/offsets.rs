//! Offsets and group administration: OffsetCommit, TxnOffsetCommit, OffsetFetch, OffsetDelete,
//! ListGroups, DescribeGroups, DeleteGroups, under a shard's lock (see [`Env`]).

use super::membership::Env;
use super::records::{self, OffsetValue};
use super::shard::ShardState;
use super::state::{CommittedOffset, Group, GroupState};
use kafka_protocol::ResponseError as E;
use mirrorlog_index::{ErrorChain, TopicPartition};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// One partition of a commit: its value, or the error it already has (metadata too large,
/// unknown partition).
pub type CommitEntry = (TopicPartition, Result<OffsetValue, i16>);

/// A topic's partitions, each with its error code (OffsetDelete's answer).
pub type TopicErrors = (String, Vec<(i32, i16)>);

/// Who commits.
#[derive(Debug, Clone)]
pub struct Committer {
    /// The request version.
    pub api_version: i16,
    /// The group.
    pub group_id: String,
    /// The member id ("" for none).
    pub member_id: String,
    /// The static instance id.
    pub group_instance_id: Option<String>,
    /// The generation (−1 for none).
    pub generation_id: i32,
    /// For TxnOffsetCommit: the producer id and epoch.
    pub txn: Option<(i64, i16)>,
}

/// A fetched offset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fetched {
    /// The partition.
    pub partition: i32,
    /// The committed offset, −1 for none.
    pub offset: i64,
    /// Its leader epoch, −1 for none.
    pub leader_epoch: i32,
    /// Its metadata.
    pub metadata: String,
    /// The partition's error.
    pub error: i16,
}

impl Fetched {
    fn none(partition: i32, error: i16) -> Fetched {
        Fetched {
            partition,
            offset: -1,
            leader_epoch: -1,
            metadata: String::new(),
            error,
        }
    }
}

/// A group as DescribeGroups shows it.
#[derive(Debug, Clone)]
pub struct Described {
    /// The state's name.
    pub state: &'static str,
    /// The protocol type ("" for none).
    pub protocol_type: String,
    /// The protocol when Stable, else "".
    pub protocol_data: String,
    /// The members.
    pub members: Vec<DescribedMember>,
}

/// A member as DescribeGroups shows it.
#[derive(Debug, Clone)]
pub struct DescribedMember {
    /// The member id.
    pub member_id: String,
    /// The static instance id.
    pub group_instance_id: Option<String>,
    /// The client id.
    pub client_id: String,
    /// The client host.
    pub client_host: String,
    /// Its metadata for the protocol (Stable only).
    pub metadata: bytes::Bytes,
    /// Its assignment (Stable only).
    pub assignment: bytes::Bytes,
}

/// Kafka's `ClassicGroup.validateOffsetCommit`.
fn validate_offset_commit(g: &Group, c: &Committer) -> Result<(), i16> {
    let txn = c.txn.is_some();
    if g.is(GroupState::Dead) {
        return Err(E::CoordinatorNotAvailable.code());
    }
    if c.generation_id < 0 && g.is(GroupState::Empty) {
        // The admin client or a consumer without group management: allowed while no member
        // exists.
        return Ok(());
    }
    if c.generation_id >= 0 || !c.member_id.is_empty() || c.group_instance_id.is_some() {
        g.validate_member(&c.member_id, c.group_instance_id.as_deref())?;
        if c.generation_id != g.generation_id {
            return Err(E::IllegalGeneration.code());
        }
    } else if !txn && !g.is(GroupState::Empty) {
        // No member id and no generation: only for groups without members (this also keeps
        // KIP-1279's offset sync off groups active here).
        return Err(E::UnknownMemberId.code());
    }
    if !txn && g.is(GroupState::CompletingRebalance) {
        return Err(E::RebalanceInProgress.code());
    }
    Ok(())
}

impl Env<'_> {
    /// Commits offsets (transactional ones are staged until the transaction ends). Returns each
    /// entry's error code, in order.
    pub fn commit_offsets(
        &self,
        st: &mut ShardState,
        c: &Committer,
        entries: Vec<CommitEntry>,
    ) -> Vec<i16> {
        let codes = self.commit_offsets_in(&mut st.groups, c, entries);
        if let Some((pid, _)) = c.txn
            && st
                .groups
                .get(&c.group_id)
                .is_some_and(|g| g.pending_txn.contains_key(&pid))
        {
            st.note_staged(pid, &c.group_id);
        }
        codes
    }

    fn commit_offsets_in(
        &self,
        groups: &mut HashMap<String, Group>,
        c: &Committer,
        entries: Vec<CommitEntry>,
    ) -> Vec<i16> {
        let n = entries.len();
        let created = !groups.contains_key(&c.group_id);
        if created {
            if c.generation_id >= 0 {
                let code = if c.txn.is_none() && c.api_version >= 9 {
                    E::GroupIdNotFound.code()
                } else {
                    E::IllegalGeneration.code()
                };
                return vec![code; n];
            }
            // A "simple" group, made by its first commit.
            groups.insert(
                c.group_id.clone(),
                Group::new(c.group_id.clone(), GroupState::Empty, self.now_ms),
            );
        }
        let g = groups.get_mut(&c.group_id).expect("present");
        if let Err(code) = validate_offset_commit(g, c) {
            return vec![code; n];
        }
        // As Kafka's `validateOffsetCommit`: a member's OffsetCommit in a Stable or
        // PreparingRebalance group is also its heartbeat (a TxnOffsetCommit is not).
        if c.txn.is_none()
            && (g.is(GroupState::Stable) || g.is(GroupState::PreparingRebalance))
            && let Some(m) = g.member_mut(&c.member_id)
        {
            m.heartbeat_deadline_ms = self.now_ms + i64::from(m.session_timeout_ms);
        }
        let mut codes = vec![0i16; n];
        let mut recs = Vec::new();
        let mut applied = Vec::new();
        for (i, (tp, v)) in entries.into_iter().enumerate() {
            let v = match v {
                Ok(v) => v,
                Err(code) => {
                    codes[i] = code;
                    continue;
                }
            };
            let kv = records::offset_key(&c.group_id, &tp.topic, tp.partition)
                .and_then(|k| Ok((k, Some(records::offset_value(&v)?))));
            match kv {
                Ok(kv) => {
                    recs.push(kv);
                    applied.push((i, tp, v));
                }
                Err(_) => codes[i] = E::OffsetMetadataTooLarge.code(),
            }
        }
        if recs.is_empty() {
            if created && g.is_disposable() {
                groups.remove(&c.group_id);
            }
            return codes;
        }
        match self.shard.append(&recs, c.txn, self.now_ms) {
            Ok(base) => {
                for (n, (_, tp, value)) in applied.into_iter().enumerate() {
                    let co = CommittedOffset {
                        value,
                        record_offset: base + n as i64,
                    };
                    match c.txn {
                        Some((pid, _)) => {
                            g.pending_txn.entry(pid).or_default().insert(tp, co);
                        }
                        None => {
                            g.offsets.insert(tp, co);
                        }
                    }
                }
            }
            Err(e) => {
                let code = super::shard::StoreError::from(e).offset_commit_code();
                tracing::warn!(group = %c.group_id, "offset commit failed: {code}");
                for (i, _, _) in applied {
                    codes[i] = code;
                }
                if created && g.is_disposable() {
                    groups.remove(&c.group_id);
                }
            }
        }
        codes
    }

    /// Fetches committed offsets: of `topics` (unknown ones: offset −1), or every committed
    /// offset when `None`. With `require_stable`, a partition with a staged transactional
    /// commit answers UNSTABLE_OFFSET_COMMIT.
    pub fn fetch_offsets(
        &self,
        groups: &HashMap<String, Group>,
        group_id: &str,
        topics: Option<Vec<(String, Vec<i32>)>>,
        require_stable: bool,
    ) -> Vec<(String, Vec<Fetched>)> {
        let g = groups.get(group_id).filter(|g| !g.is(GroupState::Dead));
        let fetch = |g: &Group, tp: &TopicPartition| -> Fetched {
            if require_stable && g.has_pending_txn_offset(tp) {
                return Fetched::none(tp.partition, E::UnstableOffsetCommit.code());
            }
            match g.offsets.get(tp) {
                Some(c) => Fetched {
                    partition: tp.partition,
                    offset: c.value.offset,
                    leader_epoch: c.value.leader_epoch,
                    metadata: c.value.metadata.clone(),
                    error: 0,
                },
                None => Fetched::none(tp.partition, 0),
            }
        };
        match topics {
            Some(topics) => topics
                .into_iter()
                .map(|(topic, parts)| {
                    let fetched = parts
                        .into_iter()
                        .map(|p| {
                            let tp = TopicPartition {
                                topic: topic.clone(),
                                partition: p,
                            };
                            g.map_or_else(|| Fetched::none(p, 0), |g| fetch(g, &tp))
                        })
                        .collect();
                    (topic, fetched)
                })
                .collect(),
            None => {
                let Some(g) = g else { return vec![] };
                let mut by_topic: BTreeMap<&str, Vec<&TopicPartition>> = BTreeMap::new();
                for tp in g.offsets.keys() {
                    by_topic.entry(&tp.topic).or_default().push(tp);
                }
                by_topic
                    .into_iter()
                    .map(|(topic, mut tps)| {
                        tps.sort();
                        (
                            topic.to_string(),
                            tps.into_iter().map(|tp| fetch(g, tp)).collect(),
                        )
                    })
                    .collect()
            }
        }
    }

    /// OffsetDelete (Kafka's `deleteOffsets`): tombstones the group's offsets (committed or
    /// staged by an open transaction) of the partitions asked for, except in topics the group's
    /// members subscribe to, which answer GROUP_SUBSCRIBED_TO_TOPIC. A partition without an
    /// offset is answered without error. `Err`: the group-level error (GROUP_ID_NOT_FOUND for
    /// an unknown or dead group, or the store's error when the tombstones cannot be written).
    pub fn delete_offsets(
        &self,
        groups: &mut HashMap<String, Group>,
        group_id: &str,
        topics: &[(String, Vec<i32>)],
    ) -> Result<Vec<TopicErrors>, i16> {
        let Some(g) = groups.get_mut(group_id) else {
            return Err(E::GroupIdNotFound.code());
        };
        if g.is(GroupState::Dead) {
            return Err(E::GroupIdNotFound.code());
        }
        // Kafka's ClassicGroup.validateOffsetDelete / isSubscribedToTopic: a group with members
        // may only lose offsets when it uses the consumer protocol (another protocol type's
        // offsets are its members' to manage: NON_EMPTY_GROUP), and when its subscriptions are
        // not known (no generation yet, or metadata that does not parse) it counts as
        // subscribed to every topic.
        let consumer = g.protocol_type.as_deref() == Some("consumer");
        let active = !g.is(GroupState::Empty);
        if active && !consumer {
            return Err(E::NonEmptyGroup.code());
        }
        let subscriptions = if active {
            g.subscribed_topics()
        } else {
            Some(Default::default())
        };
        let is_subscribed =
            |topic: &String| subscriptions.as_ref().is_none_or(|s| s.contains(topic));
        let mut doomed: Vec<TopicPartition> = vec![];
        // Each doomed partition once; a set, so a huge request costs linear time.
        let mut doomed_set = std::collections::HashSet::new();
        let mut answer = Vec::with_capacity(topics.len());
        for (topic, partitions) in topics {
            let refused = is_subscribed(topic);
            let mut codes = Vec::with_capacity(partitions.len());
            for &partition in partitions {
                if refused {
                    codes.push((partition, E::GroupSubscribedToTopic.code()));
                    continue;
                }
                codes.push((partition, 0));
                let tp = TopicPartition {
                    topic: topic.clone(),
                    partition,
                };
                let held = g.offsets.contains_key(&tp)
                    || g.pending_txn
                        .values()
                        .any(|staged| staged.contains_key(&tp));
                if held && doomed_set.insert(tp.clone()) {
                    doomed.push(tp);
                }
            }
            answer.push((topic.clone(), codes));
        }
        if doomed.is_empty() {
            return Ok(answer);
        }
        let mut recs = Vec::with_capacity(doomed.len());
        for tp in &doomed {
            match records::offset_key(group_id, &tp.topic, tp.partition) {
                Ok(k) => recs.push((k, None)),
                Err(_) => return Err(E::UnknownServerError.code()),
            }
        }
        if let Err(e) = self.shard.append(&recs, None, self.now_ms) {
            tracing::warn!(
                group = group_id,
                "deleting offsets failed: {}",
                ErrorChain(&e)
            );
            return Err(super::shard::StoreError::from(e).group_code());
        }
        for tp in &doomed {
            g.delete_offset(tp);
        }
        tracing::info!(group = group_id, deleted = doomed.len(), "offsets deleted");
        Ok(answer)
    }

    /// Deletes an Empty group: tombstones for its offsets (committed and staged) and for the
    /// group. The error code.
    pub fn delete_group(&self, groups: &mut HashMap<String, Group>, group_id: &str) -> i16 {
        let Some(g) = groups.get_mut(group_id) else {
            return E::GroupIdNotFound.code();
        };
        match g.state() {
            GroupState::Dead => return E::GroupIdNotFound.code(),
            GroupState::Stable
            | GroupState::PreparingRebalance
            | GroupState::CompletingRebalance => {
                return E::NonEmptyGroup.code();
            }
            GroupState::Empty => {}
        }
        let mut tps: BTreeSet<&TopicPartition> = g.offsets.keys().collect();
        for staged in g.pending_txn.values() {
            tps.extend(staged.keys());
        }
        let mut recs = Vec::with_capacity(tps.len() + 1);
        for tp in tps {
            match records::offset_key(group_id, &tp.topic, tp.partition) {
                Ok(k) => recs.push((k, None)),
                Err(_) => return E::UnknownServerError.code(),
            }
        }
        match records::group_key(group_id) {
            Ok(k) => recs.push((k, None)),
            Err(_) => return E::InvalidGroupId.code(),
        }
        if let Err(e) = self.shard.append(&recs, None, self.now_ms) {
            tracing::warn!(
                group = group_id,
                "deleting the group failed: {}",
                ErrorChain(&e)
            );
            return super::shard::StoreError::from(e).group_code();
        }
        g.transition_to(GroupState::Dead, self.now_ms);
        groups.remove(group_id);
        tracing::info!(group = group_id, "group deleted");
        0
    }
}

/// A group as DescribeGroups shows it: members always, their metadata and assignment and the
/// protocol only when Stable.
pub fn describe(g: &Group) -> Described {
    let stable = g.is(GroupState::Stable);
    let protocol = g.protocol_name.clone().unwrap_or_default();
    Described {
        state: g.state().name(),
        protocol_type: g.protocol_type.clone().unwrap_or_default(),
        protocol_data: if stable {
            protocol.clone()
        } else {
            String::new()
        },
        members: g
            .members()
            .map(|m| DescribedMember {
                member_id: m.member_id.clone(),
                group_instance_id: m.group_instance_id.clone(),
                client_id: m.client_id.clone(),
                client_host: m.client_host.clone(),
                metadata: if stable {
                    m.metadata(&protocol)
                } else {
                    bytes::Bytes::new()
                },
                assignment: if stable {
                    m.assignment.clone()
                } else {
                    bytes::Bytes::new()
                },
            })
            .collect(),
    }
}
