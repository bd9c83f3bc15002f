//! The mirror admin RPCs (KIP-1279 §4; codec in [`crate::mirror_rpc`]): create, delete, list
//! and describe cluster mirrors; start, stop, pause, resume and recover their topics.
//!
//! # Topic operations and their errors
//!
//! A topic's state is the summary of its partitions' states: **STOPPED** when every partition
//! is; **PAUSED** when any is PAUSING/PAUSED; **FAILED** when any is FAILED; **STOPPING** when
//! any is; otherwise **MIRRORING** (LOG_ALIGNMENT, EPOCH_FENCING, ULE_RECOVERY and MIRRORING
//! are all steps of mirroring). The error matrix (review thread MM14, with the prototype's
//! idempotent successes of spec §5):
//!
//! | op \ topic state | not in this mirror | MIRRORING | PAUSED | STOPPED | FAILED |
//! |---|---|---|---|---|---|
//! | start | starts it (see below) | success, nothing to do | MIRROR_TOPIC_NOT_STOPPED | starts again (LOG_ALIGNMENT) | MIRROR_TOPIC_NOT_STOPPED |
//! | stop | ¹ | stops (failover) | MIRROR_TOPIC_ALREADY_PAUSED | TOPIC_NOT_IN_CLUSTER_MIRROR | stops (failover) |
//! | pause | ¹ | pauses | success | MIRROR_TOPIC_BEING_STOPPED | INVALID_REQUEST (recover first) |
//! | resume | ¹ | success, nothing to do | resumes from the local log end | MIRROR_TOPIC_NOT_PAUSED | MIRROR_TOPIC_NOT_PAUSED |
//! | recover | ¹ | INVALID_REQUEST (nothing FAILED) | INVALID_REQUEST | INVALID_REQUEST | retries the FAILED partitions now |
//!
//! ¹ TOPIC_NOT_IN_CLUSTER_MIRROR when another mirror holds the topic, UNKNOWN_CLUSTER_MIRROR
//! when none does. A topic in STOPPING (a stop in progress or cut short) is being stopped: stop
//! finishes it, start answers MIRROR_TOPIC_NOT_STOPPED, pause MIRROR_TOPIC_BEING_STOPPED,
//! resume MIRROR_TOPIC_NOT_PAUSED (as the prototype, whose controller records the desired state
//! STOPPED at the stop request) and recover INVALID_REQUEST (stop again to finish it).
//!
//! Start by name also answers: INVALID_REQUEST for a topic matching `mirror.topics.exclude`
//! (exclude wins), TOPIC_ALREADY_IN_CLUSTER_MIRROR when another mirror holds it not STOPPED
//! (one owner per topic, whatever the mirrors' sources: `mirrorlog_mirror::claims`),
//! UNKNOWN_TOPIC_OR_PARTITION when the source has no such topic, TOPIC_ALREADY_EXISTS when a
//! writable local topic of that name has another topic id than the source's. A writable local
//! topic with the source's id is the same topic — a failback, or a stopped mirror topic started
//! again — and becomes a mirror topic; its LOG_ALIGNMENT asks the source for the last mirror
//! epoch of the source's mirror from us and keeps what the source already holds.
//!
//! **Patterns** (`--pattern`, `--all-topics` = `.*`): on start they are added to the mirror's
//! `mirror.topics.include` (durably) and every source topic they match that the mirror does not
//! hold starts now; later ones are discovered on each metadata refresh. A matched topic another
//! mirror owns is not taken (discovery skips it; the start answers it with
//! TOPIC_ALREADY_IN_CLUSTER_MIRROR) until that mirror stops it or is deleted. On stop, pause,
//! resume and recover they select the mirror's topics that match and are not already where the
//! operation leads (stop skips STOPPED; pause skips PAUSED and STOPPED; resume skips MIRRORING
//! and STOPPED; recover skips topics with no FAILED partition); each selected topic is then
//! answered as if named.
//!
//! **StateOffset**: a single broker has no metadata log to check it against, so only −1 (do not
//! check) is accepted; anything else is INVALID_REQUEST.

use crate::broker::Broker;
use crate::errors::MirrorErrorCode as M;
use crate::mirror_rpc::*;
use crate::mirrors::{MirrorsError, parse_mirror_configs, source_config_entries};
use kafka_protocol::ResponseError as E;
use mirrorlog_index::ErrorChain;
use mirrorlog_mirror::manager::{MirrorError, MirrorManager, PartitionStatus, compile_patterns};
use mirrorlog_mirror::state::MirrorPartitionState as S;
use std::collections::BTreeMap;
use std::sync::Arc;

/// One error: a code and a message.
type Failure = (i16, String);

fn fail(code: impl Into<i16>, msg: impl Into<String>) -> Failure {
    (code.into(), msg.into())
}

impl From<M> for i16 {
    fn from(m: M) -> i16 {
        m.code()
    }
}

fn ec(e: E) -> i16 {
    e.code()
}

/// Answers one mirror RPC.
pub fn handle(b: &Arc<Broker>, request: MirrorRequest) -> MirrorResponse {
    match request {
        MirrorRequest::CreateClusterMirror(r) => MirrorResponse::CreateClusterMirror(create(b, r)),
        MirrorRequest::DeleteClusterMirror(r) => MirrorResponse::DeleteClusterMirror(delete(b, r)),
        MirrorRequest::ListClusterMirrors(r) => MirrorResponse::ListClusterMirrors(list(b, r)),
        MirrorRequest::DescribeClusterMirrors(r) => {
            MirrorResponse::DescribeClusterMirrors(describe(b, r))
        }
        MirrorRequest::StartMirrorTopics(r) => MirrorResponse::StartMirrorTopics(start(b, r)),
        MirrorRequest::StopMirrorTopics(r) => {
            MirrorResponse::StopMirrorTopics(topics_op(b, r, Op::Stop))
        }
        MirrorRequest::PauseMirrorTopics(r) => {
            MirrorResponse::PauseMirrorTopics(topics_op(b, r, Op::Pause))
        }
        MirrorRequest::ResumeMirrorTopics(r) => {
            MirrorResponse::ResumeMirrorTopics(topics_op(b, r, Op::Resume))
        }
        MirrorRequest::RecoverMirrorTopics(r) => {
            MirrorResponse::RecoverMirrorTopics(topics_op(b, r, Op::Recover))
        }
        MirrorRequest::ReadMirrorStates(r) => MirrorResponse::ReadMirrorStates(read_states(b, r)),
        // Not advertised (see the codec's table), so the frame layer never passes them; answer
        // precisely all the same.
        MirrorRequest::WriteMirrorStates(r) => {
            MirrorResponse::WriteMirrorStates(refuse_partitions(
                r.topics.iter().map(|t| {
                    (
                        t.name.clone(),
                        t.partitions.iter().map(|p| p.partition_index),
                    )
                }),
                "WriteMirrorStates is not served: this broker is the only writer of its __mirror_state",
            ))
        }
        MirrorRequest::BumpLeaderEpochs(r) => MirrorResponse::BumpLeaderEpochs(refuse_partitions(
            r.topics.iter().map(|t| {
                (
                    t.name.clone(),
                    t.partitions.iter().map(|p| p.partition_index),
                )
            }),
            "BumpLeaderEpochs is a controller RPC; a single broker bumps its own epochs",
        )),
    }
}

fn refuse_partitions<I: Iterator<Item = i32>>(
    topics: impl Iterator<Item = (String, I)>,
    why: &str,
) -> PartitionResultsResponse {
    PartitionResultsResponse {
        throttle_time_ms: 0,
        topics: topics
            .map(|(name, parts)| TopicPartitionResults {
                name,
                partitions: parts
                    .map(|p| PartitionResult {
                        partition_index: p,
                        error_code: ec(E::UnsupportedVersion),
                        error_message: Some(why.into()),
                    })
                    .collect(),
            })
            .collect(),
    }
}

fn error_response(f: Option<Failure>) -> MirrorErrorResponse {
    let (error_code, error_message) = match f {
        None => (0, None),
        Some((c, m)) => (c, Some(m)),
    };
    MirrorErrorResponse {
        throttle_time_ms: 0,
        error_code,
        error_message,
    }
}

fn mirrors_failure(e: MirrorsError) -> Failure {
    let code = match &e {
        MirrorsError::AlreadyExists(_) => M::ClusterMirrorAlreadyExists.code(),
        MirrorsError::Unknown(_) => M::UnknownClusterMirror.code(),
        MirrorsError::InvalidConfig(_) => ec(E::InvalidConfig),
        MirrorsError::NotEmpty { .. } => M::ClusterMirrorNotEmpty.code(),
        _ => ec(E::KafkaStorageError),
    };
    (code, ErrorChain(&e).to_string())
}

fn create(b: &Arc<Broker>, r: CreateClusterMirrorRequest) -> MirrorErrorResponse {
    let mut configs = BTreeMap::new();
    for c in r.configs {
        let Some(v) = c.value else {
            return error_response(Some(fail(
                ec(E::InvalidConfig),
                format!("config {} has a null value", c.name),
            )));
        };
        if configs.insert(c.name.clone(), v).is_some() {
            return error_response(Some(fail(
                ec(E::InvalidConfig),
                format!("config {} is given twice", c.name),
            )));
        }
    }
    let r = b
        .mirrors
        .create_durable(b, &r.mirror_name, configs)
        .map(|_| ())
        .map_err(mirrors_failure);
    error_response(r.err())
}

fn delete(b: &Arc<Broker>, r: DeleteClusterMirrorRequest) -> MirrorErrorResponse {
    if r.state_offset != -1 {
        return error_response(Some(state_offset_failure(r.state_offset)));
    }
    error_response(
        b.mirrors
            .delete(b, &r.mirror_name)
            .map_err(mirrors_failure)
            .err(),
    )
}

fn state_offset_failure(offset: i64) -> Failure {
    fail(
        ec(E::InvalidRequest),
        format!(
            "StateOffset {offset}: a single broker has no metadata log to check it against; send -1"
        ),
    )
}

fn list(b: &Arc<Broker>, r: ListClusterMirrorsRequest) -> ListClusterMirrorsResponse {
    ListClusterMirrorsResponse {
        throttle_time_ms: 0,
        error_code: 0,
        mirrors: b
            .mirrors
            .all()
            .into_iter()
            .map(|m| MirrorListing {
                mirror_name: m.name().to_string(),
                source_cluster_id: m.source_cluster_id(),
                source_bootstrap: b.mirrors.source_bootstrap(m.name()),
                topic_names: if r.include_topic_names {
                    let mut names = m.topic_names();
                    names.extend(unrestored_topics(b, &m).into_iter().map(|(t, _)| t));
                    names.sort();
                    names
                } else {
                    vec![]
                },
            })
            .collect(),
    }
}

/// The read-only local topics no mirror holds that `m` may hold without knowing, with what
/// describe shows of them ([`MirrorManager::unrestored_topic_status`]): a state of theirs
/// would live in a `__mirror_state` partition that is unavailable (offline data directory), so
/// they were not restored; their start and the configs `m` copies answer `KAFKA_STORAGE_ERROR`.
fn unrestored_topics(b: &Broker, m: &MirrorManager) -> Vec<(String, Vec<PartitionStatus>)> {
    let mirrors = b.mirrors.all();
    b.topics
        .all()
        .into_iter()
        .filter(|t| !t.internal && b.mirrors.topic_owner(&t.name).is_none())
        .filter(|t| {
            (0..t.partitions).any(|p| {
                b.partition(&t.name, p)
                    .is_some_and(|h| h.read().is_read_only())
            })
        })
        .filter(|t| !mirrors.iter().any(|o| o.topic_names().contains(&t.name)))
        .filter_map(|t| {
            let statuses = m.unrestored_topic_status(&t.name, *t.id.as_bytes(), t.partitions)?;
            Some((t.name, statuses))
        })
        .collect()
}

fn describe_mirror(b: &Broker, m: &MirrorManager) -> MirrorDescription {
    let mut topics: BTreeMap<String, Vec<PartitionDescription>> = BTreeMap::new();
    let unrestored = unrestored_topics(b, m).into_iter().flat_map(|(_, s)| s);
    for p in m.describe().into_iter().chain(unrestored) {
        topics
            .entry(p.topic.clone())
            .or_default()
            .push(PartitionDescription {
                partition_index: p.partition,
                state_value: p.state.name().to_string(),
                error_message: p.failure.clone(),
                retry_attempt: p.retry_attempt.clamp(-1, i16::MAX as i32) as i16,
                source_offset: p.source_high_watermark.get(),
                destination_offset: p.log_end_offset.get(),
                last_mirror_epoch: p.last_mirror_epoch.get(),
                last_mirror_offset: p.last_mirror_offset.get(),
                open_transactions: p
                    .open_transactions
                    .iter()
                    .map(|(id, epoch, first)| OpenTransaction {
                        producer_id: id.0,
                        producer_epoch: epoch.0,
                        first_offset: first.get(),
                    })
                    .collect(),
            });
    }
    let stored = b.mirrors.stored_configs(m.name());
    let mut configs: Vec<ConfigEntry> = m
        .config()
        .entries()
        .into_iter()
        .filter(|(k, _)| !k.starts_with("mirror.topics."))
        .map(|(k, v)| ConfigEntry {
            name: k,
            value: Some(v),
        })
        .collect();
    let (inc, exc) = m.patterns();
    configs.push(ConfigEntry {
        name: "mirror.topics.include".into(),
        value: Some(inc.join(",")),
    });
    configs.push(ConfigEntry {
        name: "mirror.topics.exclude".into(),
        value: Some(exc.join(",")),
    });
    // The source client's settings, each with its effective value (a default too, as Kafka's
    // DescribeConfigs lists them), read from what the mirror was created with; an in-process
    // mirror (nothing stored) has no Kafka source client to describe.
    if !stored.is_empty()
        && let Ok((_, source)) = parse_mirror_configs(m.name(), &stored)
    {
        configs.extend(
            source_config_entries(&source)
                .into_iter()
                .map(|(name, v)| ConfigEntry {
                    name,
                    value: Some(v),
                }),
        );
    }
    for (k, v) in stored {
        if !configs.iter().any(|c| c.name == k) {
            configs.push(ConfigEntry {
                name: k,
                value: Some(v),
            });
        }
    }
    MirrorDescription {
        error_code: 0,
        error_message: None,
        mirror_name: m.name().to_string(),
        source_bootstrap: b.mirrors.source_bootstrap(m.name()),
        source_cluster_id: m.source_cluster_id(),
        authorized_operations: i32::MIN,
        topics: topics
            .into_iter()
            .map(|(topic_name, partitions)| TopicDescription {
                topic_name,
                partitions,
            })
            .collect(),
        configs,
    }
}

fn describe(b: &Arc<Broker>, r: DescribeClusterMirrorsRequest) -> DescribeClusterMirrorsResponse {
    let mirrors = match &r.mirror_names {
        None => b
            .mirrors
            .all()
            .iter()
            .map(|m| describe_mirror(b, m))
            .collect(),
        Some(names) => names
            .iter()
            .map(|n| match b.mirrors.get(n) {
                Some(m) => describe_mirror(b, &m),
                None => MirrorDescription {
                    error_code: M::UnknownClusterMirror.code(),
                    error_message: Some(format!("cluster mirror {n} does not exist")),
                    mirror_name: n.clone(),
                    authorized_operations: i32::MIN,
                    ..Default::default()
                },
            })
            .collect(),
    };
    // Failback (spec §8, §14): the requester (cluster `cluster_id`) asks, per topic id and
    // partition, for the last mirror epoch of our mirror *from it*, which must be STOPPED.
    let from_requester: Vec<Arc<MirrorManager>> = b
        .mirrors
        .all()
        .into_iter()
        .filter(|m| match &r.cluster_id {
            Some(id) => m.source_cluster_id().as_deref() == Some(id.as_str()),
            None => true,
        })
        .collect();
    let last_mirror_epochs = r
        .last_mirror_epoch_lookups
        .iter()
        .map(|l| LastMirrorEpochTopic {
            topic_id: l.topic_id,
            partitions: l
                .partitions
                .iter()
                .map(|&p| {
                    let mut answer = LastMirrorEpochPartition {
                        partition_index: p,
                        error_code: ec(E::UnknownTopicOrPartition),
                        last_mirror_epoch: -1,
                        last_mirror_offset: -1,
                    };
                    for m in &from_requester {
                        match m.last_mirror_epoch(l.topic_id, p) {
                            Ok((lme, lmo)) => {
                                answer.error_code = 0;
                                answer.last_mirror_epoch = lme.get();
                                answer.last_mirror_offset = lmo.get();
                                break;
                            }
                            Err(true) => answer.error_code = M::MirrorTopicNotStopped.code(),
                            Err(false) => {}
                        }
                    }
                    answer
                })
                .collect(),
        })
        .collect();
    DescribeClusterMirrorsResponse {
        throttle_time_ms: 0,
        mirrors,
        last_mirror_epochs,
    }
}

fn read_states(b: &Arc<Broker>, r: ReadMirrorStatesRequest) -> ReadMirrorStatesResponse {
    let Some(m) = b.mirrors.get(&r.mirror_name) else {
        return ReadMirrorStatesResponse {
            error_code: M::UnknownClusterMirror.code(),
            ..Default::default()
        };
    };
    let all = m.describe();
    ReadMirrorStatesResponse {
        throttle_time_ms: 0,
        error_code: 0,
        topics: r
            .topics
            .into_iter()
            .map(|t| TopicStates {
                partitions: t
                    .partitions
                    .iter()
                    .map(
                        |&p| match all.iter().find(|s| s.topic == t.name && s.partition == p) {
                            None => PartitionState {
                                partition_index: p,
                                error_code: ec(E::UnknownTopicOrPartition),
                                error_message: Some(format!(
                                    "{}-{p} is not in cluster mirror {}",
                                    t.name, r.mirror_name
                                )),
                                state: S::Unknown.as_byte() as i8,
                                leader_epoch: -1,
                                state_epoch: -1,
                                last_mirror_epoch: -1,
                                last_mirror_offset: -1,
                                retry_attempt: 0,
                                previous_state: S::Unknown.as_byte() as i8,
                            },
                            Some(s) => PartitionState {
                                partition_index: p,
                                error_code: 0,
                                error_message: s.failure.clone(),
                                state: s.state.as_byte() as i8,
                                leader_epoch: s.destination_leader_epoch.get(),
                                state_epoch: s.state_epoch,
                                last_mirror_epoch: s.last_mirror_epoch.get(),
                                last_mirror_offset: s.last_mirror_offset.get(),
                                retry_attempt: s.retry_attempt.clamp(-1, i16::MAX as i32) as i16,
                                previous_state: s.previous_state.unwrap_or(S::Unknown).as_byte()
                                    as i8,
                            },
                        },
                    )
                    .collect(),
                name: t.name,
            })
            .collect(),
    }
}

// ---------------------------------------------------------------------------------------------
// Topic operations

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Stop,
    Pause,
    Resume,
    Recover,
}

/// A topic's summary state (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TopicState {
    Mirroring,
    Paused,
    Stopping,
    Stopped,
    Failed,
}

fn summarize(states: &[S]) -> Option<TopicState> {
    if states.is_empty() {
        return None;
    }
    Some(if states.iter().all(|s| *s == S::Stopped) {
        TopicState::Stopped
    } else if states.contains(&S::Stopping) {
        TopicState::Stopping
    } else if states.contains(&S::Failed) {
        TopicState::Failed
    } else if states.iter().any(|s| matches!(s, S::Pausing | S::Paused)) {
        TopicState::Paused
    } else {
        TopicState::Mirroring
    })
}

fn topics_response(outcome: Result<Vec<TopicResult>, Failure>) -> MirrorTopicsResponse {
    match outcome {
        Ok(topics) => MirrorTopicsResponse {
            topics,
            ..Default::default()
        },
        Err((code, msg)) => MirrorTopicsResponse {
            error_code: code,
            error_message: Some(msg),
            ..Default::default()
        },
    }
}

fn topic_result(name: &str, r: Result<(), Failure>) -> TopicResult {
    match r {
        Ok(()) => TopicResult {
            name: name.into(),
            error_code: 0,
            error_message: None,
        },
        Err((c, m)) => TopicResult {
            name: name.into(),
            error_code: c,
            error_message: Some(m),
        },
    }
}

fn mirror_failure(e: MirrorError) -> Failure {
    match e {
        MirrorError::Source(s) => fail(
            ec(E::NetworkException),
            format!("the source cluster failed: {s}"),
        ),
        MirrorError::Engine(e) => fail(ec(E::KafkaStorageError), ErrorChain(&e).to_string()),
        e @ MirrorError::HeldByAnotherMirror { .. } => {
            fail(M::TopicAlreadyInClusterMirror, e.to_string())
        }
        other => fail(ec(E::InvalidRequest), other.to_string()),
    }
}

/// The other mirror holding `topic`, with its summary state.
fn other_holder(b: &Broker, me: &str, topic: &str) -> Option<(String, TopicState)> {
    b.mirrors.all().into_iter().find_map(|m| {
        if m.name() == me {
            return None;
        }
        summarize(&m.topic_states(topic)).map(|s| (m.name().to_string(), s))
    })
}

fn patterns_failure(patterns: &[String]) -> Option<Failure> {
    compile_patterns("pattern", patterns)
        .err()
        .map(|e| fail(ec(E::InvalidRegularExpression), e))
}

fn start(b: &Arc<Broker>, r: StartMirrorTopicsRequest) -> MirrorTopicsResponse {
    topics_response(start_inner(b, r))
}

fn start_inner(b: &Arc<Broker>, r: StartMirrorTopicsRequest) -> Result<Vec<TopicResult>, Failure> {
    let m = b.mirrors.get(&r.mirror_name).ok_or_else(|| {
        fail(
            M::UnknownClusterMirror,
            format!("cluster mirror {} does not exist", r.mirror_name),
        )
    })?;
    if let Some(f) =
        patterns_failure(&r.include_patterns).or_else(|| patterns_failure(&r.exclude_patterns))
    {
        return Err(f);
    }
    let mut results = vec![];
    if !r.topics.is_empty() {
        let on_source = m.source_topics().map_err(mirror_failure)?;
        for t in &r.topics {
            if results.iter().any(|r: &TopicResult| r.name == t.name) {
                continue;
            }
            let outcome = start_one(b, &m, &t.name, &on_source);
            results.push(topic_result(&t.name, outcome));
        }
    }
    if !r.include_patterns.is_empty() || !r.exclude_patterns.is_empty() {
        let held_before = m.topic_names();
        b.mirrors
            .add_patterns(b, &r.mirror_name, &r.include_patterns, &r.exclude_patterns)
            .map_err(mirrors_failure)?;
        m.discover().map_err(mirror_failure)?;
        // What the patterns brought in, whether this call or the sync thread (which sees the
        // new patterns at once) started it.
        let new = compile_patterns("pattern", &r.include_patterns)
            .map_err(|e| fail(ec(E::InvalidRegularExpression), e))?;
        for name in m.topic_names() {
            if !held_before.contains(&name)
                && new.iter().any(|re| re.is_match(&name))
                && !results.iter().any(|t| t.name == name)
            {
                results.push(topic_result(&name, Ok(())));
            }
        }
        // A matched source topic that discovery could not start is answered with its error
        // (as if named), not left out of an answer that then reads as success.
        let held = m.topic_names();
        let on_source = m.source_topics().map_err(mirror_failure)?;
        for (name, _) in &on_source {
            if !held.contains(name)
                && m.is_included(name)
                && new.iter().any(|re| re.is_match(name))
                && !results.iter().any(|t| &t.name == name)
            {
                let outcome = start_one(b, &m, name, &on_source);
                results.push(topic_result(name, outcome));
            }
        }
    }
    Ok(results)
}

fn start_one(
    b: &Broker,
    m: &MirrorManager,
    topic: &str,
    on_source: &[(String, [u8; 16])],
) -> Result<(), Failure> {
    if m.is_excluded(topic) {
        return Err(fail(
            ec(E::InvalidRequest),
            format!(
                "topic {topic} matches mirror.topics.exclude of cluster mirror {} (exclude wins)",
                m.name()
            ),
        ));
    }
    // The owner in the claims table: the mirror holding the topic not STOPPED (the mirror
    // itself checks it again, atomically, when it starts the topic).
    if let Some(owner) = b.mirrors.topic_owner(topic)
        && owner != m.name()
    {
        let state = b
            .mirrors
            .get(&owner)
            .and_then(|o| summarize(&o.topic_states(topic)))
            .map_or("starting", state_name);
        return Err(fail(
            M::TopicAlreadyInClusterMirror,
            format!("topic {topic} is already mirrored by cluster mirror {owner} ({state})"),
        ));
    }
    if let Some(e) = m.topic_state_unavailable(topic) {
        return Err(fail(ec(E::KafkaStorageError), ErrorChain(&e).to_string()));
    }
    match summarize(&m.topic_states(topic)) {
        Some(TopicState::Mirroring) => return Ok(()),
        Some(TopicState::Stopped) | None => {}
        Some(s) => {
            return Err(fail(
                M::MirrorTopicNotStopped,
                format!(
                    "topic {topic} is {} in cluster mirror {}; only a STOPPED topic can be started again",
                    state_name(s),
                    m.name()
                ),
            ));
        }
    }
    let Some((_, source_id)) = on_source.iter().find(|(t, _)| t == topic) else {
        return Err(fail(
            ec(E::UnknownTopicOrPartition),
            format!("the source cluster has no topic {topic}"),
        ));
    };
    if let Some(local) = b.topics.get(topic) {
        let read_only = b
            .partition(topic, 0)
            .is_some_and(|h| h.read().is_read_only());
        // A local topic with the source's id is the same topic (failback, or a stopped mirror
        // topic started again); any other writable one is not ours to overwrite.
        let same_id = local.id == uuid::Uuid::from_bytes(*source_id) && !local.id.is_nil();
        if !read_only && !same_id {
            return Err(fail(
                ec(E::TopicAlreadyExists),
                format!(
                    "topic {} exists on this cluster with topic id {} and is not a mirror topic (the source's id is {})",
                    local.name,
                    local.id,
                    uuid::Uuid::from_bytes(*source_id)
                ),
            ));
        }
    }
    m.start_topics(&[topic.to_string()]).map_err(mirror_failure)
}

fn state_name(s: TopicState) -> &'static str {
    match s {
        TopicState::Mirroring => "MIRRORING",
        TopicState::Paused => "PAUSED",
        TopicState::Stopping => "STOPPING",
        TopicState::Stopped => "STOPPED",
        TopicState::Failed => "FAILED",
    }
}

fn topics_op(b: &Arc<Broker>, r: MirrorTopicsRequest, op: Op) -> MirrorTopicsResponse {
    topics_response(topics_op_inner(b, r, op))
}

fn topics_op_inner(
    b: &Arc<Broker>,
    r: MirrorTopicsRequest,
    op: Op,
) -> Result<Vec<TopicResult>, Failure> {
    let m = b.mirrors.get(&r.mirror_name).ok_or_else(|| {
        fail(
            M::UnknownClusterMirror,
            format!("cluster mirror {} does not exist", r.mirror_name),
        )
    })?;
    if r.state_offset != -1 {
        return Err(state_offset_failure(r.state_offset));
    }
    // A set: a topic named twice is operated on, and answered, once.
    let mut selected: Vec<String> = vec![];
    for t in &r.topics {
        if !selected.contains(&t.name) {
            selected.push(t.name.clone());
        }
    }
    if !r.patterns.is_empty() {
        let res = compile_patterns("pattern", &r.patterns)
            .map_err(|e| fail(ec(E::InvalidRegularExpression), e))?;
        for t in m.topic_names() {
            if selected.contains(&t) || !res.iter().any(|re| re.is_match(&t)) {
                continue;
            }
            let Some(state) = summarize(&m.topic_states(&t)) else {
                continue;
            };
            let skip = match op {
                Op::Stop => state == TopicState::Stopped,
                Op::Pause => matches!(state, TopicState::Paused | TopicState::Stopped),
                Op::Resume => matches!(state, TopicState::Mirroring | TopicState::Stopped),
                Op::Recover => state != TopicState::Failed,
            };
            if !skip {
                selected.push(t);
            }
        }
    }
    Ok(selected
        .iter()
        .map(|t| topic_result(t, topic_op_one(b, &m, t, op)))
        .collect())
}

fn topic_op_one(b: &Broker, m: &MirrorManager, topic: &str, op: Op) -> Result<(), Failure> {
    let mirror = m.name();
    let Some(state) = summarize(&m.topic_states(topic)) else {
        return Err(match other_holder(b, mirror, topic) {
            Some((other, _)) => fail(
                M::TopicNotInClusterMirror,
                format!("topic {topic} belongs to cluster mirror {other}, not {mirror}"),
            ),
            None => fail(
                M::UnknownClusterMirror,
                format!("topic {topic} is not in any cluster mirror"),
            ),
        });
    };
    // A partition whose state lives in an offline `__mirror_state` partition: no action may
    // write its state (whatever the others' states say).
    if let Some(e) = m.topic_state_unavailable(topic) {
        return Err(fail(ec(E::KafkaStorageError), ErrorChain(&e).to_string()));
    }
    match action(op, state, topic, mirror) {
        Action::Nothing => Ok(()),
        Action::Refuse(f) => Err(f),
        Action::Run => match op {
            Op::Stop => m.stop_topic(topic),
            Op::Pause => m.pause_topic(topic),
            Op::Resume => m.resume_topic(topic),
            Op::Recover => m.recover_topic(topic).map(|_| ()),
        }
        .map_err(mirror_failure),
    }
}

/// What an operation does to a topic in a summary state.
#[derive(Debug)]
enum Action {
    /// It is where the operation leads: success, nothing done.
    Nothing,
    /// The mirror runs the operation.
    Run,
    /// The operation does not apply: this error.
    Refuse(Failure),
}

/// What `op` does to `topic` of `mirror` in summary state `state` (the matrix of the module
/// docs).
fn action(op: Op, state: TopicState, topic: &str, mirror: &str) -> Action {
    let name = state_name(state);
    // A stop in progress, or cut short (stop again to finish it): the topic's desired state is
    // STOPPED already, as the prototype's controller records it from the stop request on.
    let stopping = "; a stop is in progress or was cut short: stop it again to finish";
    match (op, state) {
        (Op::Pause, TopicState::Stopping) => Action::Refuse(fail(
            M::MirrorTopicBeingStopped,
            format!("topic {topic} is STOPPING in cluster mirror {mirror}{stopping}"),
        )),
        (Op::Resume, TopicState::Stopping) => Action::Refuse(fail(
            M::MirrorTopicNotPaused,
            format!("topic {topic} is STOPPING in cluster mirror {mirror}, not PAUSED{stopping}"),
        )),
        (Op::Recover, TopicState::Stopping) => Action::Refuse(fail(
            ec(E::InvalidRequest),
            format!("topic {topic} is STOPPING in cluster mirror {mirror}{stopping}"),
        )),
        (Op::Stop, TopicState::Stopped) => Action::Refuse(fail(
            M::TopicNotInClusterMirror,
            format!("topic {topic} is already STOPPED: it is no longer mirrored by {mirror}"),
        )),
        (Op::Stop, TopicState::Paused) => Action::Refuse(fail(
            M::MirrorTopicAlreadyPaused,
            format!(
                "topic {topic} is PAUSED in cluster mirror {mirror}; resume it before stopping"
            ),
        )),
        (Op::Stop, _) => Action::Run,
        (Op::Pause, TopicState::Stopped) => Action::Refuse(fail(
            M::MirrorTopicBeingStopped,
            format!("topic {topic} is STOPPED in cluster mirror {mirror} and cannot be paused"),
        )),
        (Op::Pause, TopicState::Paused) => Action::Nothing,
        (Op::Pause, TopicState::Failed) => Action::Refuse(fail(
            ec(E::InvalidRequest),
            format!(
                "topic {topic} has FAILED partitions in cluster mirror {mirror}; recover them first"
            ),
        )),
        (Op::Pause, _) => Action::Run,
        (Op::Resume, TopicState::Mirroring) => Action::Nothing,
        (Op::Resume, TopicState::Paused) => Action::Run,
        (Op::Resume, _) => Action::Refuse(fail(
            M::MirrorTopicNotPaused,
            format!("topic {topic} is {name} in cluster mirror {mirror}, not PAUSED"),
        )),
        (Op::Recover, TopicState::Failed) => Action::Run,
        (Op::Recover, _) => Action::Refuse(fail(
            ec(E::InvalidRequest),
            format!("topic {topic} is {name} in cluster mirror {mirror}: no partition is FAILED"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(op: Op, state: TopicState) -> Option<i16> {
        match action(op, state, "t", "m") {
            Action::Refuse((c, _)) => Some(c),
            Action::Nothing | Action::Run => None,
        }
    }

    /// The prototype's controller keeps a stopped topic's desired state STOPPED from the stop
    /// request on, so a pause of one being stopped answers MIRROR_TOPIC_BEING_STOPPED and a
    /// resume MIRROR_TOPIC_NOT_PAUSED (review thread MM14), as they do once it is STOPPED.
    #[test]
    fn a_topic_being_stopped_answers_pause_and_resume_as_a_stopped_one() {
        for op in [Op::Pause, Op::Resume] {
            assert_eq!(
                code(op, TopicState::Stopping),
                code(op, TopicState::Stopped),
                "{op:?}"
            );
        }
        assert_eq!(
            code(Op::Pause, TopicState::Stopping),
            Some(M::MirrorTopicBeingStopped.code())
        );
        assert_eq!(
            code(Op::Resume, TopicState::Stopping),
            Some(M::MirrorTopicNotPaused.code())
        );
        // A stop finishes it; a recover is refused (stop again to finish).
        assert!(matches!(
            action(Op::Stop, TopicState::Stopping, "t", "m"),
            Action::Run
        ));
        assert_eq!(
            code(Op::Recover, TopicState::Stopping),
            Some(ec(E::InvalidRequest))
        );
    }
}
