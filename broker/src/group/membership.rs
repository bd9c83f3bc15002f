//! The classic rebalance protocol: JoinGroup, SyncGroup, Heartbeat, LeaveGroup and the timers
//! that drive a group on its own (sessions, the join phase, pending syncs), following Kafka's
//! `GroupMetadataManager` / `ClassicGroup` rules.
//!
//! Every function here runs under the shard's lock. A JoinGroup or SyncGroup that must wait is
//! *parked*: its sender half sits in the member and the request thread waits on the receiver
//! outside the lock. Whatever completes the phase — another member's request or
//! [`tick`](super::GroupCoordinator::tick) — answers it. A parked request whose member is
//! removed without an answer sees its channel close and answers with an error.

use super::config::GroupConfig;
use super::shard::Shard;
use super::state::{
    Group, GroupState, JoinOutcome, JoinTimer, Member, Protocol, SyncOutcome, UNKNOWN_MEMBER_ID,
};
use bytes::Bytes;
use crossbeam_channel::Receiver;
use kafka_protocol::ResponseError as E;
use mirrorlog_index::ErrorChain;
use std::collections::HashMap;

/// An answer now, or a parked request's receiver.
#[derive(Debug)]
pub enum Reply<T> {
    /// Answered.
    Now(T),
    /// Parked: wait on this.
    Wait(Receiver<T>),
}

/// A JoinGroup, validated for group id and session timeout.
#[derive(Debug, Clone)]
pub struct JoinParams {
    /// The request version (4+: MEMBER_ID_REQUIRED; 9: skip_assignment).
    pub api_version: i16,
    /// The group.
    pub group_id: String,
    /// The member id ("" for a new member).
    pub member_id: String,
    /// The static instance id.
    pub group_instance_id: Option<String>,
    /// The client id (member ids start with it).
    pub client_id: String,
    /// The client host.
    pub client_host: String,
    /// The session timeout.
    pub session_timeout_ms: i32,
    /// The rebalance timeout.
    pub rebalance_timeout_ms: i32,
    /// The protocol type.
    pub protocol_type: String,
    /// The protocols in preference order.
    pub protocols: Vec<Protocol>,
}

/// A SyncGroup.
#[derive(Debug, Clone)]
pub struct SyncParams {
    /// The group.
    pub group_id: String,
    /// The member.
    pub member_id: String,
    /// The static instance id.
    pub group_instance_id: Option<String>,
    /// The generation.
    pub generation_id: i32,
    /// The protocol type (v5+).
    pub protocol_type: Option<String>,
    /// The protocol name (v5+).
    pub protocol_name: Option<String>,
    /// The leader's assignments.
    pub assignments: Vec<(String, Bytes)>,
}

/// The shard, the settings and the time of one operation.
#[derive(Debug, Clone, Copy)]
pub struct Env<'a> {
    /// The shard (for appends).
    pub shard: &'a Shard,
    /// The settings.
    pub config: &'a GroupConfig,
    /// Now.
    pub now_ms: i64,
}

impl Env<'_> {
    fn initial_delay_ms(&self) -> i64 {
        i64::from(self.config.group_initial_rebalance_delay_ms)
    }

    /// Handles a JoinGroup.
    pub fn join(&self, groups: &mut HashMap<String, Group>, p: JoinParams) -> Reply<JoinOutcome> {
        let is_unknown = p.member_id == UNKNOWN_MEMBER_ID;
        if !groups.contains_key(&p.group_id) {
            // A group is made by a new member only; a known member id for no group is stale.
            if !is_unknown {
                return Reply::Now(JoinOutcome::error(E::UnknownMemberId.code(), &p.member_id));
            }
            let mut g = Group::new(p.group_id.clone(), GroupState::Empty, self.now_ms);
            // As Kafka, a new group is stored at once.
            if let Err(e) = self.shard.store_group(&mut g, None, self.now_ms) {
                tracing::warn!(group = %p.group_id, "storing a new group failed: {}", ErrorChain(&e));
                return Reply::Now(JoinOutcome::error(e.group_code(), UNKNOWN_MEMBER_ID));
            }
            groups.insert(p.group_id.clone(), g);
        }
        let g = groups.get_mut(&p.group_id).expect("present");
        if !self.accept_joining_member(g, &p) {
            // As Kafka, the refused member is dropped (the group may be over a lowered limit).
            g.pending_join.remove(&p.member_id);
            if g.has_member(&p.member_id) {
                self.remove_member_and_update(g, &p.member_id, "the group is full");
            }
            return Reply::Now(JoinOutcome::error(
                E::GroupMaxSizeReached.code(),
                UNKNOWN_MEMBER_ID,
            ));
        }
        if is_unknown {
            self.join_new_member(g, p)
        } else {
            self.join_existing_member(g, p)
        }
    }

    /// Kafka's `acceptJoiningMember`, plus a bound on members waiting for their member id.
    fn accept_joining_member(&self, g: &Group, p: &JoinParams) -> bool {
        let max = self.config.group_max_size as usize;
        if p.member_id == UNKNOWN_MEMBER_ID
            && p.group_instance_id.is_none()
            && p.api_version >= 4
            && g.pending_join.len() >= max
        {
            return false;
        }
        match g.state() {
            GroupState::Empty | GroupState::Dead => true,
            GroupState::PreparingRebalance => {
                g.member(&p.member_id).is_some_and(Member::is_awaiting_join)
                    || g.num_awaiting_join() < max
            }
            GroupState::CompletingRebalance | GroupState::Stable => {
                g.has_member(&p.member_id) || g.num_members() < max
            }
        }
    }

    fn join_new_member(&self, g: &mut Group, p: JoinParams) -> Reply<JoinOutcome> {
        if g.is(GroupState::Dead) {
            return Reply::Now(JoinOutcome::error(
                E::CoordinatorNotAvailable.code(),
                UNKNOWN_MEMBER_ID,
            ));
        }
        if !g.supports_protocols(&p.protocol_type, &p.protocols) {
            return Reply::Now(JoinOutcome::error(
                E::InconsistentGroupProtocol.code(),
                UNKNOWN_MEMBER_ID,
            ));
        }
        let prefix = p.group_instance_id.as_deref().unwrap_or(&p.client_id);
        let new_id = format!("{prefix}-{}", uuid::Uuid::new_v4());
        match p.group_instance_id.clone() {
            Some(instance) => match g.static_member_id(&instance).map(str::to_string) {
                Some(old_id) => {
                    self.update_static_member_and_rebalance(g, p, &instance, &old_id, new_id)
                }
                None => self.add_member_and_rebalance(g, p, new_id),
            },
            None if p.api_version >= 4 => {
                // KIP-394: hand out the id first; the member joins with it.
                g.pending_join.insert(
                    new_id.clone(),
                    self.now_ms + i64::from(p.session_timeout_ms),
                );
                tracing::debug!(group = %g.group_id, member = %new_id, "member id required");
                Reply::Now(JoinOutcome::error(E::MemberIdRequired.code(), &new_id))
            }
            None => self.add_member_and_rebalance(g, p, new_id),
        }
    }

    fn join_existing_member(&self, g: &mut Group, p: JoinParams) -> Reply<JoinOutcome> {
        let id = p.member_id.clone();
        if g.is(GroupState::Dead) {
            return Reply::Now(JoinOutcome::error(E::CoordinatorNotAvailable.code(), &id));
        }
        if !g.supports_protocols(&p.protocol_type, &p.protocols) {
            return Reply::Now(JoinOutcome::error(E::InconsistentGroupProtocol.code(), &id));
        }
        if g.pending_join.contains_key(&id) {
            if p.group_instance_id.is_some() {
                // A pending member is always dynamic: this request mixes up two identities.
                return Reply::Now(JoinOutcome::error(E::UnknownMemberId.code(), &id));
            }
            return self.add_member_and_rebalance(g, p, id);
        }
        if let Err(code) = g.validate_member(&id, p.group_instance_id.as_deref()) {
            return Reply::Now(JoinOutcome::error(code, &id));
        }
        let matches = g.member(&id).expect("validated").matches(&p.protocols);
        match g.state() {
            GroupState::PreparingRebalance => self.update_member_and_rebalance(g, p),
            GroupState::CompletingRebalance if matches => {
                // The member lost its JoinGroup response: send it again.
                Reply::Now(g.join_outcome_for(&id))
            }
            GroupState::CompletingRebalance => self.update_member_and_rebalance(g, p),
            GroupState::Stable if g.is_leader(&id) || !matches => {
                // A leader rejoining asks for a new assignment (e.g. topic metadata changed).
                self.update_member_and_rebalance(g, p)
            }
            GroupState::Stable => Reply::Now(g.join_outcome_for(&id)),
            GroupState::Empty | GroupState::Dead => {
                Reply::Now(JoinOutcome::error(E::UnknownMemberId.code(), &id))
            }
        }
    }

    fn add_member_and_rebalance(
        &self,
        g: &mut Group,
        p: JoinParams,
        member_id: String,
    ) -> Reply<JoinOutcome> {
        let (tx, rx) = crossbeam_channel::bounded(1);
        let mut m = Member::new(
            member_id,
            p.group_instance_id,
            p.client_id,
            p.client_host,
            p.rebalance_timeout_ms,
            p.session_timeout_ms,
            p.protocol_type,
            p.protocols,
        );
        // A new member cannot heartbeat while parked, and a client that gave up may retry with
        // a fresh JoinGroup: bound how long a new member's first join may take.
        m.is_new = true;
        m.heartbeat_deadline_ms =
            self.now_ms + i64::from(self.config.group_new_member_join_timeout_ms);
        if g.is(GroupState::PreparingRebalance) && g.previous_state() == GroupState::Empty {
            g.new_member_added = true;
        }
        tracing::info!(group = %g.group_id, member = %m.member_id, state = g.state().name(), "member joins");
        g.add(m, Some(tx));
        self.maybe_prepare_rebalance_or_complete_join(g);
        Reply::Wait(rx)
    }

    fn update_member_and_rebalance(&self, g: &mut Group, p: JoinParams) -> Reply<JoinOutcome> {
        let (tx, rx) = crossbeam_channel::bounded(1);
        if let Some(old) = g.update_member(
            &p.member_id,
            p.protocols,
            p.rebalance_timeout_ms,
            p.session_timeout_ms,
            Some(tx),
        ) {
            // A retried JoinGroup replaces the parked one; the old one is told to rejoin.
            let _ = old.send(JoinOutcome::error(
                E::RebalanceInProgress.code(),
                &p.member_id,
            ));
        }
        self.maybe_prepare_rebalance_or_complete_join(g);
        Reply::Wait(rx)
    }

    /// KIP-345: a static member rejoining with an unknown member id takes over its instance's
    /// membership under a new id; the old id is fenced. A Stable group whose protocol stays
    /// the same does not rebalance: the member gets its previous assignment back.
    fn update_static_member_and_rebalance(
        &self,
        g: &mut Group,
        p: JoinParams,
        instance: &str,
        old_id: &str,
        new_id: String,
    ) -> Reply<JoinOutcome> {
        let current_leader = g.leader_id.clone();
        g.replace_static_member(instance, old_id, &new_id);
        let (old_protocols, old_rebalance, old_session) = {
            let m = g.member(&new_id).expect("replaced");
            (
                m.protocols.clone(),
                m.rebalance_timeout_ms,
                m.session_timeout_ms,
            )
        };
        let (tx, rx) = crossbeam_channel::bounded(1);
        g.update_member(
            &new_id,
            p.protocols,
            p.rebalance_timeout_ms,
            p.session_timeout_ms,
            Some(tx),
        );
        let m = g.member_mut(&new_id).expect("replaced");
        m.heartbeat_deadline_ms = self.now_ms + i64::from(m.session_timeout_ms);
        tracing::info!(group = %g.group_id, instance, old = old_id, new = %new_id, "static member rejoins with a new member id");
        match g.state() {
            GroupState::Stable => {
                if g.protocol_name.as_deref() == Some(g.select_protocol().as_str()) {
                    if let Err(e) = self.shard.store_group(g, None, self.now_ms) {
                        tracing::warn!(group = %g.group_id, "storing the static member failed, reverting: {}", ErrorChain(&e));
                        g.update_member(&new_id, old_protocols, old_rebalance, old_session, None);
                        g.replace_static_member(instance, &new_id, old_id);
                        let mut o = JoinOutcome::error(e.group_code(), UNKNOWN_MEMBER_ID);
                        o.generation_id = g.generation_id;
                        o.protocol_type = g.protocol_type.clone();
                        o.protocol_name = g.protocol_name.clone();
                        o.leader = current_leader.unwrap_or_default();
                        return Reply::Now(o);
                    }
                    let mut o = g.join_outcome_for(&new_id);
                    if p.api_version >= 9 {
                        // KIP-814: the leader learns the members but keeps the assignment.
                        o.skip_assignment = g.is_leader(&new_id);
                    } else {
                        // Older leaders would reassign: present the old leader id, so that the
                        // member acts as a follower and fetches its assignment.
                        o.members = vec![];
                        o.leader = current_leader.unwrap_or_default();
                    }
                    g.complete_join(&new_id, o);
                } else {
                    self.prepare_rebalance(g, "a static member rejoined with other protocols");
                }
            }
            GroupState::CompletingRebalance => {
                // The leader may be assigning to the old member id: start over.
                self.prepare_rebalance(
                    g,
                    "a static member rejoined while assignments are computed",
                );
            }
            GroupState::PreparingRebalance => self.maybe_complete_join_phase(g),
            GroupState::Empty | GroupState::Dead => {
                unreachable!("a group with a static member has members")
            }
        }
        Reply::Wait(rx)
    }

    /// Starts a rebalance when the state allows, else tries to end the join phase.
    pub fn maybe_prepare_rebalance_or_complete_join(&self, g: &mut Group) {
        if g.can_rebalance() {
            self.prepare_rebalance(g, "membership changed");
        } else {
            self.maybe_complete_join_phase(g);
        }
    }

    /// Kafka's `prepareRebalance`: parked SyncGroups get REBALANCE_IN_PROGRESS, the join timer
    /// starts (the initial delay for an empty group), and the group goes PreparingRebalance. An
    /// empty group's initial delay of 0 ends the join phase at once with the members that have
    /// joined: Kafka schedules its initial-delay timer at 0 ms too, which fires at once and,
    /// no member having been added meanwhile (`tryCompleteInitialRebalanceElseSchedule`), ends
    /// it whoever is still MEMBER_ID_REQUIRED.
    pub fn prepare_rebalance(&self, g: &mut Group, reason: &str) {
        if g.is(GroupState::CompletingRebalance) {
            self.reset_and_propagate_assignment_with_error(g, E::RebalanceInProgress.code());
        }
        g.sync_deadline = None;
        let initial_at_once = g.is(GroupState::Empty) && self.initial_delay_ms() == 0;
        let delayed = g.is(GroupState::Empty) && self.initial_delay_ms() > 0;
        g.join_timer = Some(if delayed {
            let delay_ms = self.initial_delay_ms();
            JoinTimer::Initial {
                deadline_ms: self.now_ms + delay_ms,
                delay_ms,
                remaining_ms: (i64::from(g.rebalance_timeout_ms()) - delay_ms).max(0),
            }
        } else {
            JoinTimer::Rebalance {
                deadline_ms: self.now_ms + i64::from(g.rebalance_timeout_ms()),
            }
        });
        g.transition_to(GroupState::PreparingRebalance, self.now_ms);
        tracing::info!(group = %g.group_id, generation = g.generation_id, reason, "preparing to rebalance");
        if initial_at_once {
            self.complete_join_phase(g);
        } else if !delayed {
            self.maybe_complete_join_phase(g);
        }
    }

    /// Ends the join phase when every member rejoined (not during an initial delay: its timer
    /// ends it), after a join or a LeaveGroup (Kafka's `maybeCompleteJoinPhase`).
    pub fn maybe_complete_join_phase(&self, g: &mut Group) {
        let in_initial_delay =
            g.previous_state() == GroupState::Empty && self.initial_delay_ms() > 0;
        if !in_initial_delay {
            self.complete_join_phase_if_all_joined(g);
        }
    }

    /// Ends the join phase when every member rejoined, even during an initial delay: a session
    /// that ends (a member's or a MEMBER_ID_REQUIRED member's) does so in Kafka
    /// (`removeMemberAndUpdateClassicGroup`, `removePendingMemberAndUpdateClassicGroup` check
    /// no delay), so the members already parked are answered then, not when the delay ends.
    fn complete_join_phase_if_all_joined(&self, g: &mut Group) {
        if g.is(GroupState::PreparingRebalance) && g.has_all_members_joined() {
            self.complete_join_phase(g);
        }
    }

    /// Kafka's `completeClassicGroupJoin`: drops dynamic members that did not rejoin, starts the
    /// next generation and answers every parked JoinGroup (the leader with the members); an
    /// empty group is stored.
    pub fn complete_join_phase(&self, g: &mut Group) {
        if !g.is(GroupState::PreparingRebalance) {
            return;
        }
        for id in g.not_yet_rejoined() {
            if g.member(&id).is_some_and(|m| m.group_instance_id.is_none()) {
                tracing::info!(group = %g.group_id, member = %id, "member did not rejoin in time; removed");
                g.remove(&id);
            }
        }
        if !g.maybe_elect_new_joined_leader() && g.num_members() > 0 {
            // Only static members that did not rejoin remain: wait for them (or for their
            // sessions to expire).
            g.join_timer = Some(JoinTimer::Rebalance {
                deadline_ms: self.now_ms + i64::from(g.rebalance_timeout_ms()),
            });
            return;
        }
        g.join_timer = None;
        g.init_next_generation(self.now_ms);
        tracing::info!(group = %g.group_id, generation = g.generation_id, members = g.num_members(), protocol = ?g.protocol_name, "join phase complete");
        if g.is(GroupState::Empty) {
            if let Err(e) = self.shard.store_group(g, None, self.now_ms) {
                tracing::warn!(group = %g.group_id, "storing the empty group failed: {}", ErrorChain(&e));
            }
            return;
        }
        for id in g.member_ids() {
            let o = g.join_outcome_for(&id);
            g.complete_join(&id, o);
            let m = g.member_mut(&id).expect("member");
            m.heartbeat_deadline_ms = self.now_ms + i64::from(m.session_timeout_ms);
            m.is_new = false;
            g.pending_sync.insert(id);
        }
        g.sync_deadline = Some((
            self.now_ms + i64::from(g.rebalance_timeout_ms()),
            g.generation_id,
        ));
    }

    /// Answers the member's parked requests with UNKNOWN_MEMBER_ID, removes it, and rebalances
    /// (or ends a join phase it held up, not during an initial delay: a LeaveGroup, or a member
    /// refused as one too many).
    pub fn remove_member_and_update(&self, g: &mut Group, id: &str, reason: &str) {
        self.remove_member_then(g, id, reason, Self::maybe_complete_join_phase);
    }

    /// Kafka's `removeMemberAndUpdateClassicGroup`, for a session that ended: as
    /// [`remove_member_and_update`](Self::remove_member_and_update), but the join phase it held
    /// up ends even during an initial delay.
    fn expire_member(&self, g: &mut Group, id: &str) {
        self.remove_member_then(
            g,
            id,
            "session expired",
            Self::complete_join_phase_if_all_joined,
        );
    }

    fn remove_member_then(
        &self,
        g: &mut Group,
        id: &str,
        reason: &str,
        in_join_phase: fn(&Self, &mut Group),
    ) {
        g.complete_join(
            id,
            JoinOutcome::error(E::UnknownMemberId.code(), UNKNOWN_MEMBER_ID),
        );
        if let Some(m) = g.member_mut(id) {
            m.complete_sync(SyncOutcome::error(E::UnknownMemberId.code()));
        }
        g.remove(id);
        tracing::info!(group = %g.group_id, member = id, reason, "member removed");
        match g.state() {
            GroupState::Dead | GroupState::Empty => {}
            GroupState::Stable | GroupState::CompletingRebalance => {
                self.maybe_prepare_rebalance_or_complete_join(g);
            }
            GroupState::PreparingRebalance => in_join_phase(self, g),
        }
    }

    fn reset_and_propagate_assignment_with_error(&self, g: &mut Group, error: i16) {
        assert!(
            g.is(GroupState::CompletingRebalance),
            "group {} resets assignments in state {:?}",
            g.group_id,
            g.state()
        );
        for id in g.member_ids() {
            g.member_mut(&id).expect("member").assignment = Bytes::new();
        }
        self.propagate_assignment(g, error);
    }

    /// Answers every parked SyncGroup with the member's assignment (or `error`), restarting
    /// their sessions.
    fn propagate_assignment(&self, g: &mut Group, error: i16) {
        let (pt, pn) = (g.protocol_type.clone(), g.protocol_name.clone());
        for id in g.member_ids() {
            let m = g.member_mut(&id).expect("member");
            let outcome = SyncOutcome {
                error,
                protocol_type: pt.clone(),
                protocol_name: pn.clone(),
                assignment: if error == 0 {
                    m.assignment.clone()
                } else {
                    Bytes::new()
                },
            };
            if m.complete_sync(outcome) {
                m.heartbeat_deadline_ms = self.now_ms + i64::from(m.session_timeout_ms);
            }
        }
    }

    /// Handles a SyncGroup: the leader's assignment is stored, then handed to every member.
    pub fn sync(&self, groups: &mut HashMap<String, Group>, p: SyncParams) -> Reply<SyncOutcome> {
        let err = |e: E| Reply::Now(SyncOutcome::error(e.code()));
        let Some(g) = groups.get_mut(&p.group_id) else {
            return err(E::UnknownMemberId);
        };
        if g.is(GroupState::Empty) {
            return err(E::UnknownMemberId);
        }
        if g.is(GroupState::Dead) {
            return err(E::CoordinatorNotAvailable);
        }
        if let Err(code) = g.validate_member(&p.member_id, p.group_instance_id.as_deref()) {
            return Reply::Now(SyncOutcome::error(code));
        }
        if p.generation_id != g.generation_id {
            return err(E::IllegalGeneration);
        }
        let inconsistent = |req: &Option<String>, ours: &Option<String>| matches!((req, ours), (Some(a), Some(b)) if a != b);
        if inconsistent(&p.protocol_type, &g.protocol_type)
            || inconsistent(&p.protocol_name, &g.protocol_name)
        {
            return err(E::InconsistentGroupProtocol);
        }
        match g.state() {
            GroupState::PreparingRebalance => err(E::RebalanceInProgress),
            GroupState::CompletingRebalance => {
                let (tx, rx) = crossbeam_channel::bounded(1);
                let m = g.member_mut(&p.member_id).expect("validated");
                if let Some(old) = m.set_awaiting_sync(tx) {
                    let _ = old.send(SyncOutcome::error(E::RebalanceInProgress.code()));
                }
                self.remove_pending_sync(g, &p.member_id);
                if g.is_leader(&p.member_id) {
                    let assignments: HashMap<String, Bytes> = p
                        .assignments
                        .into_iter()
                        .filter(|(id, _)| g.has_member(id))
                        .collect();
                    match self.shard.store_group(g, Some(&assignments), self.now_ms) {
                        Ok(()) => {
                            for id in g.member_ids() {
                                let a = assignments.get(&id).cloned().unwrap_or_default();
                                g.member_mut(&id).expect("member").assignment = a;
                            }
                            self.propagate_assignment(g, 0);
                            g.transition_to(GroupState::Stable, self.now_ms);
                            tracing::info!(group = %g.group_id, generation = g.generation_id, "assignment stored; group stable");
                        }
                        Err(e) => {
                            tracing::warn!(group = %g.group_id, "storing the assignment failed: {}", ErrorChain(&e));
                            self.reset_and_propagate_assignment_with_error(g, e.group_code());
                            self.maybe_prepare_rebalance_or_complete_join(g);
                        }
                    }
                }
                Reply::Wait(rx)
            }
            GroupState::Stable => {
                self.remove_pending_sync(g, &p.member_id);
                let m = g.member(&p.member_id).expect("validated");
                Reply::Now(SyncOutcome {
                    error: 0,
                    protocol_type: g.protocol_type.clone(),
                    protocol_name: g.protocol_name.clone(),
                    assignment: m.assignment.clone(),
                })
            }
            GroupState::Empty | GroupState::Dead => unreachable!("checked above"),
        }
    }

    fn remove_pending_sync(&self, g: &mut Group, id: &str) {
        g.pending_sync.remove(id);
        if g.pending_sync.is_empty() {
            g.sync_deadline = None;
        }
    }

    /// Handles a Heartbeat: the error code.
    pub fn heartbeat(
        &self,
        groups: &mut HashMap<String, Group>,
        group_id: &str,
        member_id: &str,
        instance_id: Option<&str>,
        generation_id: i32,
    ) -> i16 {
        let Some(g) = groups.get_mut(group_id) else {
            return E::UnknownMemberId.code();
        };
        if g.is(GroupState::Dead) {
            return E::CoordinatorNotAvailable.code();
        }
        if let Err(code) = g.validate_member(member_id, instance_id) {
            return code;
        }
        if generation_id != g.generation_id {
            return E::IllegalGeneration.code();
        }
        let state = g.state();
        if state == GroupState::Empty {
            return E::UnknownMemberId.code();
        }
        let m = g.member_mut(member_id).expect("validated");
        m.heartbeat_deadline_ms = self.now_ms + i64::from(m.session_timeout_ms);
        match state {
            GroupState::PreparingRebalance => E::RebalanceInProgress.code(),
            // Members may heartbeat right after their JoinGroup response, before SyncGroup.
            GroupState::CompletingRebalance | GroupState::Stable => 0,
            GroupState::Empty | GroupState::Dead => unreachable!("checked above"),
        }
    }

    /// Handles a LeaveGroup: per member error codes, or a group-level error.
    pub fn leave(
        &self,
        groups: &mut HashMap<String, Group>,
        group_id: &str,
        members: &[(String, Option<String>)],
    ) -> Result<Vec<i16>, i16> {
        let Some(g) = groups.get_mut(group_id) else {
            // As Kafka's `GroupCoordinatorService.leaveGroup`: no such group is each member's
            // error, not the request's (before v3, the one member's error is the response's).
            return Ok(vec![E::UnknownMemberId.code(); members.len()]);
        };
        if g.is(GroupState::Dead) {
            return Err(E::CoordinatorNotAvailable.code());
        }
        let mut out = Vec::with_capacity(members.len());
        for (member_id, instance_id) in members {
            let code = if member_id == UNKNOWN_MEMBER_ID {
                // An admin removing a static member by its instance id.
                match instance_id.as_deref().and_then(|i| g.static_member_id(i)) {
                    Some(id) => {
                        let id = id.to_string();
                        self.remove_member_and_update(g, &id, "left (by instance id)");
                        0
                    }
                    None => E::UnknownMemberId.code(),
                }
            } else if g.pending_join.remove(member_id).is_some() {
                self.maybe_complete_join_phase(g);
                0
            } else {
                match g.validate_member(member_id, instance_id.as_deref()) {
                    Err(code) => code,
                    Ok(()) => {
                        self.remove_member_and_update(g, member_id, "left the group");
                        0
                    }
                }
            };
            out.push(code);
        }
        Ok(out)
    }

    /// Kafka's `onLoaded` for a classic group: a group loaded with more members than
    /// `group.max.size` allows (the limit was lowered while it was stored) rebalances at once,
    /// so that its members rejoin and those beyond the limit are refused (GROUP_MAX_SIZE_REACHED)
    /// and dropped; otherwise a Stable group keeps every member, as a known member is always
    /// accepted back.
    pub fn on_loaded(&self, g: &mut Group) {
        let max = self.config.group_max_size as usize;
        if g.num_members() > max {
            let reason = format!(
                "loaded with {} members, over group.max.size {max}",
                g.num_members()
            );
            self.prepare_rebalance(g, &reason);
        }
    }

    /// Runs a group's timers: MEMBER_ID_REQUIRED members and sessions that expired, the end of
    /// the join phase (rebalance timeout, initial delay), members that did not sync in time.
    pub fn tick_group(&self, g: &mut Group) {
        if g.is(GroupState::Dead) {
            return;
        }
        let now = self.now_ms;
        let expired_pending: Vec<String> = g
            .pending_join
            .iter()
            .filter(|(_, deadline)| **deadline <= now)
            .map(|(id, _)| id.clone())
            .collect();
        for id in &expired_pending {
            g.pending_join.remove(id);
            tracing::info!(group = %g.group_id, member = %id, "pending member expired");
        }
        if !expired_pending.is_empty() {
            self.complete_join_phase_if_all_joined(g);
        }
        // A member with a parked request satisfies its heartbeat, except a new member, which
        // the new-member join timeout bounds.
        let expired: Vec<String> = g
            .members()
            .filter(|m| {
                m.heartbeat_deadline_ms <= now
                    && (m.is_new || !(m.is_awaiting_join() || m.is_awaiting_sync()))
            })
            .map(|m| m.member_id.clone())
            .collect();
        for id in expired {
            if g.has_member(&id) {
                self.expire_member(g, &id);
            }
        }
        if let Some(timer) = g.join_timer
            && timer.deadline_ms() <= now
        {
            if !g.is(GroupState::PreparingRebalance) {
                g.join_timer = None;
            } else {
                match timer {
                    JoinTimer::Rebalance { .. } => self.complete_join_phase(g),
                    JoinTimer::Initial {
                        delay_ms,
                        remaining_ms,
                        ..
                    } => {
                        if g.new_member_added && remaining_ms != 0 {
                            g.new_member_added = false;
                            let delay = self.initial_delay_ms().min(remaining_ms);
                            g.join_timer = Some(JoinTimer::Initial {
                                deadline_ms: now + delay,
                                delay_ms: delay,
                                remaining_ms: (remaining_ms - delay_ms).max(0),
                            });
                        } else {
                            self.complete_join_phase(g);
                        }
                    }
                }
            }
        }
        if let Some((deadline, generation)) = g.sync_deadline
            && deadline <= now
        {
            g.sync_deadline = None;
            let syncing = g.is(GroupState::CompletingRebalance) || g.is(GroupState::Stable);
            if syncing && generation == g.generation_id && !g.pending_sync.is_empty() {
                let mut late: Vec<String> = g.pending_sync.iter().cloned().collect();
                late.sort();
                tracing::info!(group = %g.group_id, members = ?late, "members did not sync in time; removed");
                for id in &late {
                    g.remove(id);
                }
                self.prepare_rebalance(g, "members did not sync in time");
            }
        }
    }
}
