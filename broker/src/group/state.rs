//! One classic group in memory: its state machine, members, protocol votes, and committed and
//! staged offsets. Pure bookkeeping — no I/O, no clock: callers pass `now`.
//!
//! States and their transitions (Kafka's `ClassicGroupState`):
//!
//! ```text
//!            +-------------------------------------------+
//!            v                                           |
//!  Empty --> PreparingRebalance --> CompletingRebalance --> Stable
//!    ^         |   ^                    |                    |
//!    +---------+   +--------------------+--------------------+
//!  (join phase ends with no member)  (a member joins, leaves, expires, or a
//!                                     member's metadata changes)
//!  any state --> Dead (group deleted or expired; removed from the coordinator)
//! ```

use super::records::{GroupValue, MemberValue, OffsetValue};
use bytes::Bytes;
use crossbeam_channel::Sender;
use mirrorlog_index::TopicPartition;
use std::collections::{BTreeMap, HashMap, HashSet};

/// Kafka's UNKNOWN_MEMBER_ID sentinel: the empty member id.
pub const UNKNOWN_MEMBER_ID: &str = "";

/// A classic group's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupState {
    /// No members (possibly committed offsets).
    Empty,
    /// Waiting for the members to (re)join.
    PreparingRebalance,
    /// Joined; waiting for the leader's assignment.
    CompletingRebalance,
    /// Members hold their assignments.
    Stable,
    /// Deleted or expired.
    Dead,
}

impl GroupState {
    /// Kafka's name, as DescribeGroups and ListGroups report it.
    pub fn name(self) -> &'static str {
        match self {
            GroupState::Empty => "Empty",
            GroupState::PreparingRebalance => "PreparingRebalance",
            GroupState::CompletingRebalance => "CompletingRebalance",
            GroupState::Stable => "Stable",
            GroupState::Dead => "Dead",
        }
    }

    fn valid_previous(self) -> &'static [GroupState] {
        use GroupState::*;
        match self {
            Empty => &[PreparingRebalance],
            PreparingRebalance => &[Stable, CompletingRebalance, Empty],
            CompletingRebalance => &[PreparingRebalance],
            Stable => &[CompletingRebalance],
            Dead => &[Stable, PreparingRebalance, CompletingRebalance, Empty, Dead],
        }
    }
}

/// What a parked JoinGroup is answered with.
#[derive(Debug, Clone, PartialEq)]
pub struct JoinOutcome {
    /// The error code (0 for none).
    pub error: i16,
    /// The member id (the new one for MEMBER_ID_REQUIRED).
    pub member_id: String,
    /// The generation, −1 on error.
    pub generation_id: i32,
    /// The group's protocol type.
    pub protocol_type: Option<String>,
    /// The selected protocol.
    pub protocol_name: Option<String>,
    /// The leader's member id ("" for none).
    pub leader: String,
    /// KIP-814: the leader need not compute an assignment (static leader rejoin, v9).
    pub skip_assignment: bool,
    /// The members with their metadata: for the leader only.
    pub members: Vec<JoinedMember>,
}

impl JoinOutcome {
    /// An error answer.
    pub fn error(code: i16, member_id: &str) -> JoinOutcome {
        JoinOutcome {
            error: code,
            member_id: member_id.to_string(),
            generation_id: -1,
            protocol_type: None,
            protocol_name: None,
            leader: String::new(),
            skip_assignment: false,
            members: vec![],
        }
    }
}

/// A member as the leader sees it in its JoinGroup response.
#[derive(Debug, Clone, PartialEq)]
pub struct JoinedMember {
    /// The member id.
    pub member_id: String,
    /// The static instance id.
    pub group_instance_id: Option<String>,
    /// The member's metadata for the selected protocol.
    pub metadata: Bytes,
}

/// What a parked SyncGroup is answered with.
#[derive(Debug, Clone, PartialEq)]
pub struct SyncOutcome {
    /// The error code (0 for none).
    pub error: i16,
    /// The group's protocol type.
    pub protocol_type: Option<String>,
    /// The group's protocol.
    pub protocol_name: Option<String>,
    /// The member's assignment (empty on error).
    pub assignment: Bytes,
}

impl SyncOutcome {
    /// An error answer.
    pub fn error(code: i16) -> SyncOutcome {
        SyncOutcome {
            error: code,
            protocol_type: None,
            protocol_name: None,
            assignment: Bytes::new(),
        }
    }
}

/// One protocol a member supports, with its metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Protocol {
    /// The protocol (assignor) name.
    pub name: String,
    /// The member's metadata for it (for `consumer`: the subscription).
    pub metadata: Bytes,
}

/// A group member.
#[derive(Debug)]
pub struct Member {
    /// The member id.
    pub member_id: String,
    /// The static instance id.
    pub group_instance_id: Option<String>,
    /// The client id.
    pub client_id: String,
    /// The client host.
    pub client_host: String,
    /// How long a rebalance may wait for this member to rejoin.
    pub rebalance_timeout_ms: i32,
    /// How long without a heartbeat before the member is dropped.
    pub session_timeout_ms: i32,
    /// The protocol type it joined with.
    pub protocol_type: String,
    /// Its protocols in preference order.
    pub protocols: Vec<Protocol>,
    /// Its current assignment.
    pub assignment: Bytes,
    /// A parked JoinGroup.
    awaiting_join: Option<Sender<JoinOutcome>>,
    /// A parked SyncGroup.
    awaiting_sync: Option<Sender<SyncOutcome>>,
    /// Joined but not yet through a completed join phase: expires by the new-member join
    /// timeout even while its JoinGroup is parked.
    pub is_new: bool,
    /// When its session expires unless a heartbeat (or a completed join/sync) moves it.
    pub heartbeat_deadline_ms: i64,
}

impl Member {
    /// A member with no parked request.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        member_id: String,
        group_instance_id: Option<String>,
        client_id: String,
        client_host: String,
        rebalance_timeout_ms: i32,
        session_timeout_ms: i32,
        protocol_type: String,
        protocols: Vec<Protocol>,
    ) -> Member {
        Member {
            member_id,
            group_instance_id,
            client_id,
            client_host,
            rebalance_timeout_ms,
            session_timeout_ms,
            protocol_type,
            protocols,
            assignment: Bytes::new(),
            awaiting_join: None,
            awaiting_sync: None,
            is_new: false,
            heartbeat_deadline_ms: i64::MAX,
        }
    }

    /// Whether a JoinGroup of this member is parked.
    pub fn is_awaiting_join(&self) -> bool {
        self.awaiting_join.is_some()
    }

    /// Whether a SyncGroup of this member is parked.
    pub fn is_awaiting_sync(&self) -> bool {
        self.awaiting_sync.is_some()
    }

    /// The member's metadata for `protocol` (empty when it does not support it).
    pub fn metadata(&self, protocol: &str) -> Bytes {
        self.protocols
            .iter()
            .find(|p| p.name == protocol)
            .map(|p| p.metadata.clone())
            .unwrap_or_default()
    }

    /// Whether the member joined with exactly these protocols and metadata.
    pub fn matches(&self, protocols: &[Protocol]) -> bool {
        self.protocols == protocols
    }

    /// Its vote: its most preferred protocol among the candidates.
    fn vote<'a>(&'a self, candidates: &HashSet<&str>) -> Option<&'a str> {
        self.protocols
            .iter()
            .map(|p| p.name.as_str())
            .find(|n| candidates.contains(n))
    }

    /// Parks a SyncGroup, returning a previously parked one (to be answered by the caller).
    pub fn set_awaiting_sync(&mut self, tx: Sender<SyncOutcome>) -> Option<Sender<SyncOutcome>> {
        self.awaiting_sync.replace(tx)
    }

    /// Answers the parked SyncGroup, if any. Returns whether there was one.
    pub fn complete_sync(&mut self, outcome: SyncOutcome) -> bool {
        match self.awaiting_sync.take() {
            // A receiver gone (its request thread ended) is not our concern.
            Some(tx) => {
                let _ = tx.send(outcome);
                true
            }
            None => false,
        }
    }
}

/// An offset as committed, and where its record sits in `__consumer_offsets`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommittedOffset {
    /// The stored value.
    pub value: OffsetValue,
    /// The log offset of its record: a transactional commit completes only over a committed
    /// offset whose record is older (Kafka's `appendedBatchOffset` rule).
    pub record_offset: i64,
}

/// When the join phase ends on its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JoinTimer {
    /// At the rebalance timeout.
    Rebalance {
        /// When.
        deadline_ms: i64,
    },
    /// The first rebalance of an empty group: `group.initial.rebalance.delay.ms`, extended
    /// while new members keep arriving, up to the rebalance timeout.
    Initial {
        /// When.
        deadline_ms: i64,
        /// The delay this deadline was set with.
        delay_ms: i64,
        /// What remains of the rebalance timeout after it.
        remaining_ms: i64,
    },
}

impl JoinTimer {
    /// When it fires.
    pub fn deadline_ms(self) -> i64 {
        match self {
            JoinTimer::Rebalance { deadline_ms } | JoinTimer::Initial { deadline_ms, .. } => {
                deadline_ms
            }
        }
    }
}

/// A classic group.
#[derive(Debug)]
pub struct Group {
    /// The group id.
    pub group_id: String,
    state: GroupState,
    previous_state: GroupState,
    /// When the group entered its state (None for a group loaded from a value without it).
    pub state_timestamp_ms: Option<i64>,
    /// The generation: +1 at the end of every join phase.
    pub generation_id: i32,
    /// The protocol type (None for a group made by offset commits alone).
    pub protocol_type: Option<String>,
    /// The selected protocol.
    pub protocol_name: Option<String>,
    /// The leader.
    pub leader_id: Option<String>,
    members: BTreeMap<String, Member>,
    static_members: HashMap<String, String>,
    /// Members told MEMBER_ID_REQUIRED, not yet back: member id → session deadline.
    pub pending_join: HashMap<String, i64>,
    /// Members of the current generation that have not sent SyncGroup.
    pub pending_sync: HashSet<String>,
    /// When members still in `pending_sync` are dropped, and for which generation.
    pub sync_deadline: Option<(i64, i32)>,
    /// When the join phase ends on its own.
    pub join_timer: Option<JoinTimer>,
    /// A member joined during the initial delay: extend it.
    pub new_member_added: bool,
    supported_protocols: HashMap<String, usize>,
    num_awaiting_join: usize,
    /// Committed offsets.
    pub offsets: HashMap<TopicPartition, CommittedOffset>,
    /// Transactional offsets staged by producer id, awaiting the transaction's end.
    pub pending_txn: HashMap<i64, HashMap<TopicPartition, CommittedOffset>>,
    /// The encoded GroupMetadataValue last stored (what a restart would load); compaction
    /// writes it again rather than a state in the middle of a rebalance.
    pub stored_value: Option<Bytes>,
}

impl Group {
    /// A group with no member.
    pub fn new(group_id: String, state: GroupState, now_ms: i64) -> Group {
        Group {
            group_id,
            state,
            previous_state: GroupState::Dead,
            state_timestamp_ms: Some(now_ms),
            generation_id: 0,
            protocol_type: None,
            protocol_name: None,
            leader_id: None,
            members: BTreeMap::new(),
            static_members: HashMap::new(),
            pending_join: HashMap::new(),
            pending_sync: HashSet::new(),
            sync_deadline: None,
            join_timer: None,
            new_member_added: false,
            supported_protocols: HashMap::new(),
            num_awaiting_join: 0,
            offsets: HashMap::new(),
            pending_txn: HashMap::new(),
            stored_value: None,
        }
    }

    /// The state.
    pub fn state(&self) -> GroupState {
        self.state
    }

    /// The state before the current one.
    pub fn previous_state(&self) -> GroupState {
        self.previous_state
    }

    /// Whether it is in `s`.
    pub fn is(&self, s: GroupState) -> bool {
        self.state == s
    }

    /// Moves to `s`; an invalid transition is a programmer error.
    pub fn transition_to(&mut self, s: GroupState, now_ms: i64) {
        assert!(
            s.valid_previous().contains(&self.state),
            "group {}: invalid transition {:?} -> {s:?}",
            self.group_id,
            self.state
        );
        self.previous_state = self.state;
        self.state = s;
        self.state_timestamp_ms = Some(now_ms);
    }

    /// Whether a rebalance may start from the current state.
    pub fn can_rebalance(&self) -> bool {
        GroupState::PreparingRebalance
            .valid_previous()
            .contains(&self.state)
    }

    /// The members.
    pub fn members(&self) -> impl Iterator<Item = &Member> {
        self.members.values()
    }

    /// The member ids.
    pub fn member_ids(&self) -> Vec<String> {
        self.members.keys().cloned().collect()
    }

    /// How many members.
    pub fn num_members(&self) -> usize {
        self.members.len()
    }

    /// A member.
    pub fn member(&self, id: &str) -> Option<&Member> {
        self.members.get(id)
    }

    /// A member, to change.
    pub fn member_mut(&mut self, id: &str) -> Option<&mut Member> {
        self.members.get_mut(id)
    }

    /// Whether `id` is a member.
    pub fn has_member(&self, id: &str) -> bool {
        self.members.contains_key(id)
    }

    /// The member id of a static member.
    pub fn static_member_id(&self, instance_id: &str) -> Option<&str> {
        self.static_members.get(instance_id).map(String::as_str)
    }

    /// Whether `id` is the leader.
    pub fn is_leader(&self, id: &str) -> bool {
        self.leader_id.as_deref() == Some(id)
    }

    /// Members with a parked JoinGroup.
    pub fn num_awaiting_join(&self) -> usize {
        self.num_awaiting_join
    }

    /// Whether every member rejoined and no MEMBER_ID_REQUIRED member is outstanding.
    pub fn has_all_members_joined(&self) -> bool {
        self.members.len() == self.num_awaiting_join && self.pending_join.is_empty()
    }

    /// The largest rebalance timeout of the members.
    pub fn rebalance_timeout_ms(&self) -> i32 {
        self.members
            .values()
            .map(|m| m.rebalance_timeout_ms)
            .max()
            .unwrap_or(0)
    }

    /// Kafka's `validateMember`: a known static instance must map to `member_id`
    /// (FENCED_INSTANCE_ID otherwise), and `member_id` must be a member (UNKNOWN_MEMBER_ID).
    pub fn validate_member(&self, member_id: &str, instance_id: Option<&str>) -> Result<(), i16> {
        use kafka_protocol::ResponseError as E;
        if let Some(i) = instance_id {
            match self.static_member_id(i) {
                None => return Err(E::UnknownMemberId.code()),
                Some(existing) if existing != member_id => {
                    return Err(E::FencedInstanceId.code());
                }
                Some(_) => {}
            }
        }
        if !self.has_member(member_id) {
            return Err(E::UnknownMemberId.code());
        }
        Ok(())
    }

    /// Whether a member with this protocol type and these protocols may join: an empty group
    /// needs a non-empty type and at least one protocol; otherwise the type must match and one
    /// protocol must be supported by every member.
    pub fn supports_protocols(&self, protocol_type: &str, protocols: &[Protocol]) -> bool {
        if self.is(GroupState::Empty) {
            return !protocol_type.is_empty() && !protocols.is_empty();
        }
        self.protocol_type.as_deref() == Some(protocol_type)
            && protocols.iter().any(|p| {
                self.supported_protocols.get(&p.name).copied().unwrap_or(0) == self.members.len()
            })
    }

    /// Adds a member (its JoinGroup parked when `awaiting` is given). The first member sets the
    /// protocol type and becomes leader if there is none.
    pub fn add(&mut self, mut member: Member, awaiting: Option<Sender<JoinOutcome>>) {
        if let Some(i) = &member.group_instance_id {
            let old = self
                .static_members
                .insert(i.clone(), member.member_id.clone());
            assert!(old.is_none(), "static member {i} added twice");
        }
        if self.members.is_empty() {
            self.protocol_type = Some(member.protocol_type.clone());
        }
        assert_eq!(
            self.protocol_type.as_deref(),
            Some(member.protocol_type.as_str()),
            "protocol type checked before adding"
        );
        if self.leader_id.is_none() {
            self.leader_id = Some(member.member_id.clone());
        }
        for p in &member.protocols {
            *self.supported_protocols.entry(p.name.clone()).or_default() += 1;
        }
        member.awaiting_join = awaiting;
        if member.awaiting_join.is_some() {
            self.num_awaiting_join += 1;
        }
        self.pending_join.remove(&member.member_id);
        self.members.insert(member.member_id.clone(), member);
    }

    /// Removes a member (a new leader is chosen if it led). Parked requests are not answered:
    /// the caller does that first when needed; dropping them answers the waiter with an error.
    pub fn remove(&mut self, id: &str) -> Option<Member> {
        let removed = self.members.remove(id);
        if let Some(m) = &removed {
            for p in &m.protocols {
                if let Some(n) = self.supported_protocols.get_mut(&p.name) {
                    *n -= 1;
                }
            }
            if m.awaiting_join.is_some() {
                self.num_awaiting_join -= 1;
            }
            if let Some(i) = &m.group_instance_id {
                self.static_members.remove(i);
            }
        }
        if self.is_leader(id) {
            self.leader_id = self.members.keys().next().cloned();
        }
        self.pending_join.remove(id);
        self.pending_sync.remove(id);
        removed
    }

    /// Replaces a member's protocols and timeouts and parks (or unparks) its JoinGroup. Returns
    /// a JoinGroup that was parked before, for the caller to answer.
    pub fn update_member(
        &mut self,
        id: &str,
        protocols: Vec<Protocol>,
        rebalance_timeout_ms: i32,
        session_timeout_ms: i32,
        awaiting: Option<Sender<JoinOutcome>>,
    ) -> Option<Sender<JoinOutcome>> {
        let m = self.members.get_mut(id).expect("updating a member");
        for p in &m.protocols {
            if let Some(n) = self.supported_protocols.get_mut(&p.name) {
                *n -= 1;
            }
        }
        m.protocols = protocols;
        for p in &m.protocols {
            *self.supported_protocols.entry(p.name.clone()).or_default() += 1;
        }
        m.rebalance_timeout_ms = rebalance_timeout_ms;
        m.session_timeout_ms = session_timeout_ms;
        match (m.awaiting_join.is_some(), awaiting.is_some()) {
            (false, true) => self.num_awaiting_join += 1,
            (true, false) => self.num_awaiting_join -= 1,
            _ => {}
        }
        std::mem::replace(&mut m.awaiting_join, awaiting)
    }

    /// Answers a member's parked JoinGroup. Returns whether there was one.
    pub fn complete_join(&mut self, id: &str, outcome: JoinOutcome) -> bool {
        let Some(m) = self.members.get_mut(id) else {
            return false;
        };
        match m.awaiting_join.take() {
            Some(tx) => {
                self.num_awaiting_join -= 1;
                // The waiter may be gone; nothing to do then.
                let _ = tx.send(outcome);
                true
            }
            None => false,
        }
    }

    /// Answers every parked JoinGroup and SyncGroup with `error` (the coordinator is going
    /// away).
    pub fn release_parked(&mut self, error: i16) {
        for id in self.member_ids() {
            self.complete_join(&id, JoinOutcome::error(error, &id));
            if let Some(m) = self.members.get_mut(&id) {
                m.complete_sync(SyncOutcome::error(error));
            }
        }
    }

    /// The members that have not rejoined during this join phase.
    pub fn not_yet_rejoined(&self) -> Vec<String> {
        self.members
            .values()
            .filter(|m| m.awaiting_join.is_none())
            .map(|m| m.member_id.clone())
            .collect()
    }

    /// Kafka's `maybeElectNewJoinedLeader`: keeps the leader if it rejoined, else elects a
    /// member that did. False when no member rejoined (or there is no leader).
    pub fn maybe_elect_new_joined_leader(&mut self) -> bool {
        let Some(leader) = self.leader_id.clone() else {
            return false;
        };
        if self
            .members
            .get(&leader)
            .is_some_and(|m| m.awaiting_join.is_some())
        {
            return true;
        }
        match self.members.values().find(|m| m.awaiting_join.is_some()) {
            Some(m) => {
                tracing::info!(group = %self.group_id, old = %leader, new = %m.member_id, "leader did not rejoin; electing a new one");
                self.leader_id = Some(m.member_id.clone());
                true
            }
            None => false,
        }
    }

    /// Kafka's `selectProtocol`: among the protocols every member supports, the one most members
    /// prefer (ties go to the leader's preference, then to the name).
    pub fn select_protocol(&self) -> String {
        assert!(
            !self.members.is_empty(),
            "selecting a protocol for no member"
        );
        let n = self.members.len();
        let candidates: HashSet<&str> = self
            .supported_protocols
            .iter()
            .filter(|(_, c)| **c == n)
            .map(|(p, _)| p.as_str())
            .collect();
        let mut votes: HashMap<&str, usize> = HashMap::new();
        for m in self.members.values() {
            if let Some(v) = m.vote(&candidates) {
                *votes.entry(v).or_default() += 1;
            }
        }
        let leader_rank = |p: &str| {
            self.leader_id
                .as_deref()
                .and_then(|l| self.members.get(l))
                .and_then(|m| m.protocols.iter().position(|q| q.name == p))
                .unwrap_or(usize::MAX)
        };
        votes
            .into_iter()
            .max_by(|(a, va), (b, vb)| {
                va.cmp(vb)
                    .then_with(|| leader_rank(b).cmp(&leader_rank(a)))
                    .then_with(|| b.cmp(a))
            })
            .map(|(p, _)| p.to_string())
            .expect("join checks keep one protocol common to all members")
    }

    /// Kafka's `initNextGeneration`: the next generation, with a protocol and
    /// CompletingRebalance when there are members, else Empty.
    pub fn init_next_generation(&mut self, now_ms: i64) {
        self.generation_id += 1;
        if self.members.is_empty() {
            self.protocol_name = None;
            self.transition_to(GroupState::Empty, now_ms);
        } else {
            self.protocol_name = Some(self.select_protocol());
            self.transition_to(GroupState::CompletingRebalance, now_ms);
        }
        self.pending_sync.clear();
    }

    /// The members with their metadata for the selected protocol (the leader's JoinGroup
    /// response).
    pub fn joined_members(&self) -> Vec<JoinedMember> {
        let protocol = self.protocol_name.as_deref().unwrap_or("");
        self.members
            .values()
            .map(|m| JoinedMember {
                member_id: m.member_id.clone(),
                group_instance_id: m.group_instance_id.clone(),
                metadata: m.metadata(protocol),
            })
            .collect()
    }

    /// The JoinGroup answer for member `id` in the current generation.
    pub fn join_outcome_for(&self, id: &str) -> JoinOutcome {
        JoinOutcome {
            error: 0,
            member_id: id.to_string(),
            generation_id: self.generation_id,
            protocol_type: self.protocol_type.clone(),
            protocol_name: self.protocol_name.clone(),
            leader: self.leader_id.clone().unwrap_or_default(),
            skip_assignment: false,
            members: if self.is_leader(id) {
                self.joined_members()
            } else {
                vec![]
            },
        }
    }

    /// Kafka's `replaceStaticMember`: the instance's member gets `new_id`; its parked requests
    /// are answered FENCED_INSTANCE_ID (a duplicate of the instance is waiting on them).
    pub fn replace_static_member(&mut self, instance_id: &str, old_id: &str, new_id: &str) {
        use kafka_protocol::ResponseError as E;
        let fenced = E::FencedInstanceId.code();
        self.complete_join(old_id, JoinOutcome::error(fenced, old_id));
        let mut m = self.members.remove(old_id).expect("replacing a member");
        m.complete_sync(SyncOutcome::error(fenced));
        m.member_id = new_id.to_string();
        // Kafka builds the replacement with isNew = false: a parked JoinGroup then counts as
        // its heartbeat, so the session timeout cannot expel it during a long join phase.
        m.is_new = false;
        self.members.insert(new_id.to_string(), m);
        if self.is_leader(old_id) {
            self.leader_id = Some(new_id.to_string());
        }
        self.pending_sync.remove(old_id);
        self.static_members
            .insert(instance_id.to_string(), new_id.to_string());
    }

    /// The topics the members subscribe to, when the group uses the `consumer` protocol and its
    /// subscriptions parse (Kafka's `computeSubscribedTopics`).
    pub fn subscribed_topics(&self) -> Option<HashSet<String>> {
        if self.protocol_type.as_deref() != Some("consumer") {
            return None;
        }
        let protocol = self.protocol_name.as_deref()?;
        let mut all = HashSet::new();
        for m in self.members.values() {
            all.extend(super::records::consumer_subscription_topics(
                &m.metadata(protocol),
            )?);
        }
        Some(all)
    }

    /// The group as a GroupMetadataValue, with `assignments` instead of the members' own when
    /// given.
    pub fn to_value(&self, assignments: Option<&HashMap<String, Bytes>>) -> GroupValue {
        let protocol = self.protocol_name.as_deref().unwrap_or("");
        GroupValue {
            protocol_type: self.protocol_type.clone().unwrap_or_default(),
            generation: self.generation_id,
            protocol: self.protocol_name.clone(),
            leader: self.leader_id.clone(),
            current_state_timestamp_ms: self.state_timestamp_ms.unwrap_or(-1),
            members: self
                .members
                .values()
                .map(|m| MemberValue {
                    member_id: m.member_id.clone(),
                    group_instance_id: m.group_instance_id.clone(),
                    client_id: m.client_id.clone(),
                    client_host: m.client_host.clone(),
                    rebalance_timeout_ms: m.rebalance_timeout_ms,
                    session_timeout_ms: m.session_timeout_ms,
                    subscription: m.metadata(protocol),
                    assignment: assignments
                        .map(|a| a.get(&m.member_id).cloned().unwrap_or_default())
                        .unwrap_or_else(|| m.assignment.clone()),
                })
                .collect(),
        }
    }

    /// A group as loaded from its last GroupMetadataValue: Stable with the stored members (their
    /// sessions restarting at `now_ms`) or Empty.
    pub fn from_value(group_id: String, v: &GroupValue, now_ms: i64) -> Group {
        let mut g = Group::new(
            group_id,
            if v.members.is_empty() || v.protocol.is_none() {
                GroupState::Empty
            } else {
                GroupState::Stable
            },
            now_ms,
        );
        g.state_timestamp_ms = Some(v.current_state_timestamp_ms).filter(|t| *t >= 0);
        g.generation_id = v.generation;
        g.protocol_type = Some(v.protocol_type.clone()).filter(|t| !t.is_empty());
        g.protocol_name = v.protocol.clone();
        if g.is(GroupState::Stable) {
            let protocol = v.protocol.clone().expect("checked");
            for mv in &v.members {
                let mut m = Member::new(
                    mv.member_id.clone(),
                    mv.group_instance_id.clone(),
                    mv.client_id.clone(),
                    mv.client_host.clone(),
                    if mv.rebalance_timeout_ms == -1 {
                        mv.session_timeout_ms
                    } else {
                        mv.rebalance_timeout_ms
                    },
                    mv.session_timeout_ms,
                    v.protocol_type.clone(),
                    vec![Protocol {
                        name: protocol.clone(),
                        metadata: mv.subscription.clone(),
                    }],
                );
                m.assignment = mv.assignment.clone();
                m.heartbeat_deadline_ms = now_ms.saturating_add(i64::from(mv.session_timeout_ms));
                g.add(m, None);
            }
            g.leader_id = v
                .leader
                .clone()
                .filter(|l| g.has_member(l))
                .or_else(|| g.members.keys().next().cloned());
        }
        g
    }

    /// Whether any transactional offset is staged for `tp`.
    pub fn has_pending_txn_offset(&self, tp: &TopicPartition) -> bool {
        self.pending_txn.values().any(|m| m.contains_key(tp))
    }

    /// Applies a committed transaction's staged offsets of `producer_id` (only over committed
    /// offsets whose records are older), or drops them. Returns how many were applied.
    pub fn complete_txn(&mut self, producer_id: i64, commit: bool) -> usize {
        let Some(staged) = self.pending_txn.remove(&producer_id) else {
            return 0;
        };
        if !commit {
            return 0;
        }
        let mut n = 0;
        for (tp, c) in staged {
            let newer = self
                .offsets
                .get(&tp)
                .is_none_or(|old| old.record_offset < c.record_offset);
            if newer {
                self.offsets.insert(tp, c);
                n += 1;
            }
        }
        n
    }

    /// Removes the committed offset of `tp` and every transactional offset staged for it (an
    /// offset tombstone).
    pub fn delete_offset(&mut self, tp: &TopicPartition) {
        self.offsets.remove(tp);
        for staged in self.pending_txn.values_mut() {
            staged.remove(tp);
        }
        self.pending_txn.retain(|_, s| !s.is_empty());
    }

    /// Whether the group holds nothing worth keeping: Empty, no offset, nothing staged.
    pub fn is_disposable(&self) -> bool {
        self.is(GroupState::Empty) && self.offsets.is_empty() && self.pending_txn.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn proto(names: &[&str]) -> Vec<Protocol> {
        names
            .iter()
            .map(|n| Protocol {
                name: n.to_string(),
                metadata: Bytes::from(format!("meta-{n}")),
            })
            .collect()
    }

    fn member(id: &str, protocols: &[&str]) -> Member {
        Member::new(
            id.into(),
            None,
            "client".into(),
            "/127.0.0.1".into(),
            1000,
            1000,
            "consumer".into(),
            proto(protocols),
        )
    }

    #[test]
    fn first_member_sets_type_and_leads() {
        let mut g = Group::new("g".into(), GroupState::Empty, 0);
        assert!(g.supports_protocols("consumer", &proto(&["range"])));
        assert!(!g.supports_protocols("", &proto(&["range"])));
        assert!(!g.supports_protocols("consumer", &[]));
        g.add(member("a", &["range"]), None);
        g.transition_to(GroupState::PreparingRebalance, 1);
        assert_eq!(g.protocol_type.as_deref(), Some("consumer"));
        assert!(g.is_leader("a"));
        assert!(!g.supports_protocols("connect", &proto(&["range"])));
        assert!(!g.supports_protocols("consumer", &proto(&["roundrobin"])));
        assert!(g.supports_protocols("consumer", &proto(&["roundrobin", "range"])));
    }

    #[test]
    fn protocol_selection_goes_by_votes_among_common_protocols() {
        let mut g = Group::new("g".into(), GroupState::Empty, 0);
        g.add(member("a", &["sticky", "range"]), None);
        g.add(member("b", &["range", "sticky", "rr"]), None);
        g.add(member("c", &["range", "sticky"]), None);
        // rr is not common; range gets two votes, sticky one.
        assert_eq!(g.select_protocol(), "range");
        g.remove("c");
        // One vote each: the leader's (a) preference wins the tie.
        assert_eq!(g.select_protocol(), "sticky");
    }

    #[test]
    fn removing_the_leader_elects_another_member() {
        let mut g = Group::new("g".into(), GroupState::Empty, 0);
        g.add(member("a", &["range"]), None);
        g.add(member("b", &["range"]), None);
        assert!(g.is_leader("a"));
        g.remove("a");
        assert!(g.is_leader("b"));
        g.remove("b");
        assert_eq!(g.leader_id, None);
    }

    #[test]
    fn awaiting_join_count_follows_parks_and_answers() {
        let mut g = Group::new("g".into(), GroupState::Empty, 0);
        let (tx, rx) = crossbeam_channel::bounded(1);
        g.add(member("a", &["range"]), Some(tx));
        g.add(member("b", &["range"]), None);
        assert_eq!(g.num_awaiting_join(), 1);
        assert!(!g.has_all_members_joined());
        let (tx2, _rx2) = crossbeam_channel::bounded(1);
        assert!(
            g.update_member("b", proto(&["range"]), 1, 1, Some(tx2))
                .is_none()
        );
        assert!(g.has_all_members_joined());
        g.pending_join.insert("c".into(), 10);
        assert!(!g.has_all_members_joined());
        g.pending_join.clear();
        assert!(g.complete_join("a", JoinOutcome::error(0, "a")));
        assert_eq!(rx.recv().unwrap().member_id, "a");
        assert_eq!(g.num_awaiting_join(), 1);
        g.remove("b");
        assert_eq!(g.num_awaiting_join(), 0);
    }

    #[test]
    fn static_members_are_validated_by_instance() {
        let mut g = Group::new("g".into(), GroupState::Empty, 0);
        let mut m = member("a", &["range"]);
        m.group_instance_id = Some("i".into());
        g.add(m, None);
        assert_eq!(g.validate_member("a", Some("i")), Ok(()));
        assert_eq!(g.validate_member("x", Some("i")), Err(82));
        assert_eq!(g.validate_member("a", Some("j")), Err(25));
        assert_eq!(g.validate_member("x", None), Err(25));
        g.replace_static_member("i", "a", "a2");
        assert_eq!(g.static_member_id("i"), Some("a2"));
        assert!(g.is_leader("a2"));
        assert_eq!(g.validate_member("a", Some("i")), Err(82));
    }

    #[test]
    fn transactional_offsets_apply_only_over_older_records() {
        let tp = TopicPartition {
            topic: "t".into(),
            partition: 0,
        };
        let c = |offset, record_offset| CommittedOffset {
            value: OffsetValue {
                offset,
                leader_epoch: -1,
                metadata: String::new(),
                commit_timestamp_ms: 0,
                expire_timestamp_ms: None,
            },
            record_offset,
        };
        let mut g = Group::new("g".into(), GroupState::Empty, 0);
        g.pending_txn
            .entry(7)
            .or_default()
            .insert(tp.clone(), c(5, 10));
        g.offsets.insert(tp.clone(), c(9, 15));
        assert_eq!(g.complete_txn(7, true), 0, "a later plain commit wins");
        assert_eq!(g.offsets[&tp].value.offset, 9);
        g.pending_txn
            .entry(7)
            .or_default()
            .insert(tp.clone(), c(11, 20));
        assert_eq!(g.complete_txn(7, true), 1);
        assert_eq!(g.offsets[&tp].value.offset, 11);
        g.pending_txn
            .entry(8)
            .or_default()
            .insert(tp.clone(), c(30, 25));
        assert_eq!(g.complete_txn(8, false), 0);
        assert_eq!(g.offsets[&tp].value.offset, 11);
        assert!(g.pending_txn.is_empty());
    }

    #[test]
    fn value_round_trip_restores_a_stable_group() {
        let mut g = Group::new("g".into(), GroupState::Empty, 0);
        g.add(member("a", &["range"]), None);
        g.add(member("b", &["range"]), None);
        g.transition_to(GroupState::PreparingRebalance, 1);
        g.init_next_generation(2);
        g.transition_to(GroupState::Stable, 3);
        let v = g.to_value(None);
        let l = Group::from_value("g".into(), &v, 100);
        assert!(l.is(GroupState::Stable));
        assert_eq!(l.generation_id, 1);
        assert_eq!(l.num_members(), 2);
        assert!(l.is_leader("a"));
        assert_eq!(l.member("b").unwrap().heartbeat_deadline_ms, 1100);
        assert_eq!(l.protocol_name.as_deref(), Some("range"));
    }

    #[test]
    #[should_panic(expected = "invalid transition")]
    fn invalid_transitions_panic() {
        let mut g = Group::new("g".into(), GroupState::Empty, 0);
        g.transition_to(GroupState::Stable, 1);
    }
}
