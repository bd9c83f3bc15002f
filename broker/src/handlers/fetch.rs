//! Fetch (v4–v16): reads through the engine, long polling, and incremental fetch sessions
//! (KIP-227).
//!
//! # Reads
//! A fetch from a replica (`replica_id >= 0`, or `replica_state.replica_id >= 0` from v15) is
//! answered, per partition, as Kafka's leader answers a replica that is not in the partition's
//! assignment — a single node has no followers: `UNKNOWN_LEADER_EPOCH` when it names a current
//! leader epoch, else `NOT_LEADER_OR_FOLLOWER` (after the leader-epoch checks, as in Kafka), so
//! no client posing as a follower reads past the high watermark. A consumer reads to the high
//! watermark (`isolation_level` 0) or to the last stable offset with the aborted transactions
//! of the range (`isolation_level` 1). Per partition,
//! in the order of Kafka's `Partition.fetchRecords`: the partition must exist
//! (`UNKNOWN_TOPIC_OR_PARTITION`; an unknown topic id from v13 is `UNKNOWN_TOPIC_ID`, but a
//! session keeps the name an id resolved to, so its deleted topic's partition is
//! `UNKNOWN_TOPIC_OR_PARTITION` and, once the name is created again, `INCONSISTENT_TOPIC_ID`), the
//! request's `current_leader_epoch` must match ours (`FENCED_LEADER_EPOCH` when older,
//! `UNKNOWN_LEADER_EPOCH` when newer), a `last_fetched_epoch` is checked for divergence
//! ([`check_last_fetched_epoch`]), then the log is read at `fetch_offset`
//! (`OFFSET_OUT_OF_RANGE` outside `[log start, log end]`). A partition answered with an error
//! carries no records and high watermark, last stable offset and log start offset −1; Fetch v5
//! and older get `KAFKA_STORAGE_ERROR` as `NOT_LEADER_OR_FOLLOWER` (Kafka's
//! `maybeDownConvertStorageError`); from v16 a partition answered `NOT_LEADER_OR_FOLLOWER` or
//! `FENCED_LEADER_EPOCH` names its current leader and epoch, with this node in `node_endpoints`.
//! The partitions unknown before the read (`UNKNOWN_TOPIC_ID`, `UNKNOWN_TOPIC_OR_PARTITION`:
//! Kafka's `KafkaApis` answers them without reading) come after the partitions read, as in
//! Kafka's response, and a session created by the request holds them in that order.
//!
//! Byte limits follow Kafka's `ReplicaManager.readFromLocalLog`: each partition reads at most
//! `min(partition_max_bytes, what is left of max_bytes)`; the first partition that returns data
//! may exceed both by one whole batch (`min_one_batch`); a later one whose first batch does not
//! fit gets no records (Kafka's `firstEntryIncomplete`), else its slice may end in a partial
//! batch, which clients skip. A negative limit (a negative `partition_max_bytes`, or a negative
//! `max_bytes` before the first partition is read) answers the partition
//! `UNKNOWN_SERVER_ERROR` when it has data to read, as Kafka's `LogSegment.read` throws then.
//!
//! # Zero copy, almost
//! DESIGN.md §2 serves record bytes from the segment file with `sendfile`. The response encoder
//! (the `kafka-protocol` crate) needs the records as in-memory [`Bytes`], so the engine's
//! [`FileSlice`](mirrorlog_segment::segment::FileSlice) is read with `read_all`: one copy into
//! user space, no decoding or re-encoding of any batch. Whether a `sendfile` path beats
//! `pread` + `write` here is a later benchmark item (DESIGN §4 measured `sendfile` slower than
//! read + write on loopback).
//!
//! # Long poll
//! When the first read found fewer than `min_bytes` and `max_wait_ms > 0`, the fetch waits as
//! Kafka's `DelayedFetch`: it registers on the broker's
//! [`AppendNotifier`](crate::broker::AppendNotifier) for exactly the partitions it reads (keyed by
//! partition, as Kafka's purgatory) and, before sleeping and at each wake-up, checks where each
//! partition's bound (high watermark or last stable offset) lies against where its first read
//! started ([`LogPosition`]), reading nothing: it is done when a partition is gone, offline, fenced
//! or diverging, when its log was truncated since the read (a mirror's log alignment: the read's
//! position may name bytes since rewritten), when a fetch offset is below the log start
//! (DeleteRecords) or above its bound, when a bound lies in a later segment than the read (a read
//! stops at its segment's end), or when the bytes between read and bound, each capped at its
//! `partition_max_bytes`, reach `min_bytes`; then (or at the deadline) it reads and answers. The
//! registration is re-armed before each check, so no append is missed. As in Kafka, an error or a
//! diverging epoch in any partition the first read reads answers at once; a partition the first
//! read finds unknown (`UNKNOWN_TOPIC_ID`, `UNKNOWN_TOPIC_OR_PARTITION`: Kafka answers it in
//! `KafkaApis`, outside the read) is answered beside the others without ending their wait (a
//! session still holding a deleted topic's partition long-polls as usual).
//!
//! # Sessions
//! See [`FetchSessionCache`].

use super::current_leader::{CurrentLeaders, node_endpoints};
use crate::broker::{Broker, deadline_in};
use crate::errors::engine_error_code;
use crate::topics::sb;
use bytes::Bytes;
use kafka_protocol::ResponseError;
use kafka_protocol::messages::fetch_response::{
    AbortedTransaction, EpochEndOffset, FetchableTopicResponse, NodeEndpoint, PartitionData,
};
use kafka_protocol::messages::{FetchRequest, FetchResponse, ProducerId, TopicName};
use mirrorlog_engine::error::EngineError;
use mirrorlog_engine::log::{FetchIsolation, LogPosition, PartitionLog};
use mirrorlog_engine::manager::PartitionHandle;
use mirrorlog_index::{ErrorChain, LeaderEpoch, Offset};
use parking_lot::Mutex;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Instant;
use uuid::Uuid;

/// Kafka's `max.incremental.fetch.session.cache.slots` default (`BrokerConfig` sets it).
pub const DEFAULT_SESSION_SLOTS: i32 = 1000;
/// How long a session must be unused (or, to be evicted for a bigger one, must have existed)
/// before a new session may evict it: Kafka's `MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS`, a
/// constant there, not a setting.
pub const SESSION_EVICTION_MS: i64 = 120_000;

/// KIP-227's epochs: a full request that creates a session, and one that closes it (or asks for
/// none).
const INITIAL_EPOCH: i32 = 0;
const FINAL_EPOCH: i32 = -1;
/// No session.
const INVALID_SESSION_ID: i32 = 0;
/// A cached offset nobody has been told yet (`-1`, Kafka's `INVALID_HIGH_WATERMARK` and
/// friends).
const UNKNOWN: i64 = -1;

// ---------------------------------------------------------------------------------------------
// Divergence
// ---------------------------------------------------------------------------------------------

/// What the `last_fetched_epoch` check decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EpochCheck {
    /// The fetcher's history is on this log: read as usual.
    Consistent,
    /// The fetcher's log diverges: it must truncate to `end_offset` (of `epoch`) before fetching
    /// again. Answered in the `DivergingEpoch` tagged field, with no records.
    Diverging {
        /// The largest epoch ≤ the fetcher's last fetched epoch this log knows.
        epoch: i32,
        /// Where that epoch ends on this log.
        end_offset: i64,
    },
    /// `OFFSET_OUT_OF_RANGE`: the end of the last fetched epoch cannot be determined, or the
    /// fetch offset is below the log start.
    OutOfRange,
}

/// Kafka's divergence check for a fetch carrying `last_fetched_epoch >= 0` (`Partition.readRecords`
/// in 3.x, `validateFetchOffsetAndMaybeGetDivergingEpoch` before): `end_for` is this log's
/// `end_offset_for(last_fetched_epoch, log_end_offset)` as `(epoch, end offset)`.
///
/// - either half of `end_for` undefined (−1) → out of range;
/// - `fetch_offset` below the log start → out of range, diverging or not;
/// - `end epoch < last_fetched_epoch` or `end offset < fetch_offset` → diverging at `end_for`;
/// - otherwise consistent.
pub fn check_last_fetched_epoch(
    end_for: (i32, i64),
    last_fetched_epoch: i32,
    fetch_offset: i64,
    log_start_offset: i64,
) -> EpochCheck {
    let (epoch, end_offset) = end_for;
    if epoch < 0 || end_offset < 0 {
        return EpochCheck::OutOfRange;
    }
    if fetch_offset < log_start_offset {
        return EpochCheck::OutOfRange;
    }
    if epoch < last_fetched_epoch || end_offset < fetch_offset {
        return EpochCheck::Diverging { epoch, end_offset };
    }
    EpochCheck::Consistent
}

// ---------------------------------------------------------------------------------------------
// Sessions
// ---------------------------------------------------------------------------------------------

/// How a request names a topic: by name before v13, by id from v13.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum TopicRef {
    Name(String),
    Id(Uuid),
}

/// One partition as a request (or session) names it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct PartKey {
    topic: TopicRef,
    partition: i32,
}

/// A partition's request parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FetchParams {
    fetch_offset: i64,
    max_bytes: i32,
    current_leader_epoch: i32,
    last_fetched_epoch: i32,
}

/// A session's partition: what the fetcher asks for, and what it was last told.
#[derive(Debug, Clone)]
struct CachedPartition {
    params: FetchParams,
    high_watermark: i64,
    last_stable_offset: i64,
    log_start_offset: i64,
    /// The name a topic id resolved to when the session first could (always `None` for a topic
    /// named by name): kept, as Kafka's `CachedPartition` keeps its topic name once
    /// `maybeResolveUnknownName` found it, so a deleted topic's partition answers
    /// `UNKNOWN_TOPIC_OR_PARTITION` and, once the name is created again, the log's other id
    /// answers `INCONSISTENT_TOPIC_ID` (`UNKNOWN_TOPIC_ID` only for an id never resolved).
    name: Option<String>,
    /// Position in the session's order.
    seq: u64,
}

impl CachedPartition {
    /// Keeps the name `spec`'s topic id resolved to, unless one is kept already (Kafka's
    /// `maybeResolveUnknownName`).
    fn remember_name(&mut self, spec: &ReadSpec) {
        if self.name.is_none() && matches!(spec.key.topic, TopicRef::Id(_)) {
            self.name.clone_from(&spec.name);
        }
    }

    /// Kafka's `CachedPartition.maybeUpdateResponseData` (updating): whether an incremental
    /// response must carry this partition — records, an error, a diverging epoch, a preferred
    /// replica, or a high watermark, last stable offset or log start offset the fetcher has not
    /// been told — and remembers what it is told. After an error the cached high watermark is
    /// forgotten, so the partition is sent again once the error clears.
    fn must_respond(&mut self, d: &PartitionData) -> bool {
        let mut must = d.records.as_ref().is_some_and(|r| !r.is_empty());
        if self.high_watermark != d.high_watermark {
            must = true;
            self.high_watermark = d.high_watermark;
        }
        if self.last_stable_offset != d.last_stable_offset {
            must = true;
            self.last_stable_offset = d.last_stable_offset;
        }
        if self.log_start_offset != d.log_start_offset {
            must = true;
            self.log_start_offset = d.log_start_offset;
        }
        if d.preferred_read_replica.0 >= 0 {
            must = true;
        }
        if d.error_code != 0 {
            self.high_watermark = UNKNOWN;
            must = true;
        }
        if d.diverging_epoch != EpochEndOffset::default() {
            must = true;
        }
        must
    }
}

/// One incremental fetch session.
#[derive(Debug)]
struct Session {
    /// The epoch the next request must carry.
    epoch: i32,
    /// Created by a v13+ request (topic ids) or an older one (names); requests must not mix.
    uses_topic_ids: bool,
    /// Created by a replica: harder to evict.
    privileged: bool,
    partitions: HashMap<PartKey, CachedPartition>,
    /// Partitions in fetch order (partitions that returned data move to the back, for fairness).
    order: BTreeMap<u64, PartKey>,
    next_seq: u64,
    created_ms: i64,
    last_used_ms: i64,
}

impl Session {
    fn new(uses_topic_ids: bool, privileged: bool, now_ms: i64) -> Session {
        Session {
            epoch: next_epoch(INITIAL_EPOCH),
            uses_topic_ids,
            privileged,
            partitions: HashMap::new(),
            order: BTreeMap::new(),
            next_seq: 0,
            created_ms: now_ms,
            last_used_ms: now_ms,
        }
    }

    /// Adds a partition (at the back, nothing told yet) or updates its request parameters.
    fn upsert(&mut self, key: &PartKey, params: FetchParams) {
        if let Some(c) = self.partitions.get_mut(key) {
            c.params = params;
            return;
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        self.order.insert(seq, key.clone());
        self.partitions.insert(
            key.clone(),
            CachedPartition {
                params,
                high_watermark: UNKNOWN,
                last_stable_offset: UNKNOWN,
                log_start_offset: UNKNOWN,
                name: None,
                seq,
            },
        );
    }

    fn forget(&mut self, key: &PartKey) {
        if let Some(c) = self.partitions.remove(key) {
            self.order.remove(&c.seq);
        }
    }

    fn move_to_back(&mut self, key: &PartKey) {
        let seq = self.next_seq;
        if let Some(c) = self.partitions.get_mut(key) {
            self.order.remove(&c.seq);
            c.seq = seq;
            self.next_seq += 1;
            self.order.insert(seq, key.clone());
        }
    }

    /// The partitions to read, in session order.
    fn ordered(&self) -> Vec<(PartKey, FetchParams)> {
        self.order
            .values()
            .map(|k| (k.clone(), self.partitions[k].params))
            .collect()
    }

    /// The topic names the session's topic ids resolved to (see [`CachedPartition::name`]).
    fn names(&self) -> HashMap<PartKey, String> {
        self.partitions
            .iter()
            .filter_map(|(k, c)| Some((k.clone(), c.name.clone()?)))
            .collect()
    }
}

/// Kafka's `FetchMetadata.nextEpoch`.
fn next_epoch(prev: i32) -> i32 {
    if prev < 0 {
        FINAL_EPOCH
    } else if prev == i32::MAX {
        1
    } else {
        prev + 1
    }
}

/// What a request's session fields ask for.
#[derive(Debug, Clone, PartialEq, Eq)]
enum SessionContext {
    /// A top-level error; nothing is read.
    Error(i16),
    /// A full fetch without a session (`session_epoch` −1): answered with session id 0.
    Sessionless,
    /// A full fetch creating a session (`session_epoch` 0) once it is answered.
    Full,
    /// An incremental fetch of session `id`, now at `epoch`: read `parts`, answer only what
    /// changed. `names` holds the names the session's topic ids resolved to before.
    Incremental {
        id: i32,
        epoch: i32,
        parts: Vec<(PartKey, FetchParams)>,
        names: HashMap<PartKey, String>,
    },
}

/// The incremental fetch sessions (KIP-227), as Kafka's `FetchSessionCache` and `FetchManager`:
///
/// - `session_id` 0, `session_epoch` 0: a full fetch; a new session is created (when the cache
///   has a slot, see below) and its id returned; its next request carries epoch 1.
/// - `session_epoch` −1: a full fetch without a session (response id 0); a nonzero
///   `session_id` is closed first. `session_id` ≠ 0 with epoch 0 closes that session and opens
///   a new one.
/// - `session_id` ≠ 0, `session_epoch` > 0: incremental. An unknown id is
///   `FETCH_SESSION_ID_NOT_FOUND`, a wrong epoch `INVALID_FETCH_SESSION_EPOCH`, a switch between
///   topic names and topic ids `FETCH_SESSION_TOPIC_ID_ERROR` (all top level, nothing read). The
///   request's partitions are added to the session or update its fetch offset and limits,
///   `forgotten_topics_data` removes partitions, and every session partition is read; the
///   response carries only partitions with records, an error, a diverging epoch, or a high
///   watermark, last stable offset or log start offset changed since the session last told the
///   fetcher (Kafka's leaves out a change of the last stable offset alone; one more entry is
///   harmless). The expected epoch is bumped. A session left with no partitions is closed and
///   the request answered without one.
///
/// Capacity: `slots` sessions (`max.incremental.fetch.session.cache.slots`, default 1000, see
/// `BrokerConfig`). When full, a new session evicts, as Kafka's `tryEvict`: the least recently
/// used session if it has been idle longer than `eviction_ms` ([`SESSION_EVICTION_MS`], 120 s,
/// Kafka's constant); otherwise the least valuable evictable session (consumers before
/// replicas, then the fewest partitions) if the new one is worth more, where a session is
/// evictable once older than `eviction_ms` (a replica's session may also evict any consumer's).
/// Otherwise the request is answered without a session. Nothing expires on a timer, as in
/// Kafka: a consumer polling less often than `eviction_ms` keeps its session while the cache
/// has room (the slots bound the memory held).
#[derive(Debug)]
pub struct FetchSessionCache {
    slots: usize,
    eviction_ms: i64,
    sessions: Mutex<HashMap<i32, Session>>,
}

impl Default for FetchSessionCache {
    fn default() -> Self {
        FetchSessionCache::new(DEFAULT_SESSION_SLOTS as usize, SESSION_EVICTION_MS)
    }
}

impl FetchSessionCache {
    /// A cache of at most `slots` sessions (0 disables sessions), idle ones evictable after
    /// `eviction_ms`.
    pub fn new(slots: usize, eviction_ms: i64) -> FetchSessionCache {
        FetchSessionCache {
            slots,
            eviction_ms,
            sessions: Mutex::new(HashMap::new()),
        }
    }

    /// Sessions held.
    pub fn len(&self) -> usize {
        self.sessions.lock().len()
    }

    /// Whether no session is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Interprets a request's session fields, applying an incremental request's partitions and
    /// forgotten partitions to its session (Kafka's `FetchManager.newContext`).
    fn begin(
        &self,
        session_id: i32,
        epoch: i32,
        uses_topic_ids: bool,
        requested: &[(PartKey, FetchParams)],
        forgotten: &[PartKey],
        now_ms: i64,
    ) -> SessionContext {
        let mut sessions = self.sessions.lock();
        if epoch == INITIAL_EPOCH || epoch == FINAL_EPOCH {
            if session_id != INVALID_SESSION_ID {
                sessions.remove(&session_id);
            }
            return if epoch == FINAL_EPOCH {
                SessionContext::Sessionless
            } else {
                SessionContext::Full
            };
        }
        let Some(s) = sessions.get_mut(&session_id) else {
            return SessionContext::Error(ResponseError::FetchSessionIdNotFound.code());
        };
        if s.epoch != epoch {
            return SessionContext::Error(ResponseError::InvalidFetchSessionEpoch.code());
        }
        if s.uses_topic_ids != uses_topic_ids {
            return SessionContext::Error(ResponseError::FetchSessionTopicIdError.code());
        }
        for (k, p) in requested {
            s.upsert(k, *p);
        }
        for k in forgotten {
            s.forget(k);
        }
        if s.partitions.is_empty() {
            sessions.remove(&session_id);
            return SessionContext::Sessionless;
        }
        s.epoch = next_epoch(s.epoch);
        s.last_used_ms = now_ms;
        SessionContext::Incremental {
            id: session_id,
            epoch: s.epoch,
            parts: s.ordered(),
            names: s.names(),
        }
    }

    /// Creates a session holding the partitions of a full response, each remembering what it was
    /// told and the name its topic id resolved to. Returns its id, or 0 when the cache has no
    /// slot for it.
    fn create<'a>(
        &self,
        uses_topic_ids: bool,
        privileged: bool,
        parts: impl Iterator<Item = (&'a ReadSpec, &'a PartitionData)>,
        now_ms: i64,
    ) -> i32 {
        if self.slots == 0 {
            return INVALID_SESSION_ID;
        }
        let mut s = Session::new(uses_topic_ids, privileged, now_ms);
        for (spec, d) in parts {
            s.upsert(&spec.key, spec.params);
            let c = s.partitions.get_mut(&spec.key).expect("just added");
            c.must_respond(d);
            c.remember_name(spec);
        }
        let mut sessions = self.sessions.lock();
        if sessions.len() >= self.slots
            && !self.try_evict(&mut sessions, privileged, s.partitions.len(), now_ms)
        {
            return INVALID_SESSION_ID;
        }
        let id = loop {
            let id = (Uuid::new_v4().as_u128() as u32 & 0x7fff_ffff) as i32;
            if id != INVALID_SESSION_ID && !sessions.contains_key(&id) {
                break id;
            }
        };
        sessions.insert(id, s);
        id
    }

    /// Kafka's `FetchSessionCache.tryEvict`; see the type docs.
    fn try_evict(
        &self,
        sessions: &mut HashMap<i32, Session>,
        privileged: bool,
        size: usize,
        now_ms: i64,
    ) -> bool {
        let stale = sessions
            .iter()
            .min_by_key(|(id, s)| (s.last_used_ms, **id))
            .filter(|(_, s)| now_ms.saturating_sub(s.last_used_ms) > self.eviction_ms)
            .map(|(id, _)| *id);
        if let Some(id) = stale {
            sessions.remove(&id);
            return true;
        }
        let least = sessions
            .iter()
            .filter(|(_, s)| {
                now_ms.saturating_sub(s.created_ms) > self.eviction_ms
                    || (privileged && !s.privileged)
            })
            .min_by_key(|(id, s)| (s.privileged, s.partitions.len(), **id))
            .map(|(id, s)| (*id, s.privileged, s.partitions.len()));
        match least {
            Some((id, p, n)) if (privileged, size) > (p, n) => {
                sessions.remove(&id);
                true
            }
            _ => false,
        }
    }

    /// Filters an incremental response (Kafka's `IncrementalFetchContext`): keeps the partitions
    /// that must be sent, remembers what they tell (and a topic id's name resolved for the first
    /// time), and moves partitions that returned records to the back of the session's order. A
    /// session that moved on meanwhile (a concurrent request) is `INVALID_FETCH_SESSION_EPOCH`.
    fn finish(
        &self,
        id: i32,
        epoch: i32,
        read: Vec<(ReadSpec, PartitionData)>,
        now_ms: i64,
    ) -> Result<Vec<(ReadSpec, PartitionData)>, i16> {
        let mut sessions = self.sessions.lock();
        let Some(s) = sessions.get_mut(&id) else {
            return Err(ResponseError::FetchSessionIdNotFound.code());
        };
        if s.epoch != epoch {
            return Err(ResponseError::InvalidFetchSessionEpoch.code());
        }
        let mut out = Vec::with_capacity(read.len());
        for (spec, d) in read {
            let Some(c) = s.partitions.get_mut(&spec.key) else {
                continue;
            };
            c.remember_name(&spec);
            if c.must_respond(&d) {
                if d.records.as_ref().is_some_and(|r| !r.is_empty()) {
                    s.move_to_back(&spec.key);
                }
                out.push((spec, d));
            }
        }
        s.last_used_ms = now_ms;
        Ok(out)
    }
}

// ---------------------------------------------------------------------------------------------
// The handler
// ---------------------------------------------------------------------------------------------

/// One partition to read, with its topic resolved against the registry.
#[derive(Debug, Clone)]
struct ReadSpec {
    key: PartKey,
    /// The topic's name; `None` for an unknown topic id.
    name: Option<String>,
    /// The topic's id (nil for an unknown name).
    topic_id: Uuid,
    params: FetchParams,
}

/// Answers a Fetch request. See the module docs.
pub fn handle(b: &Broker, r: FetchRequest, version: i16) -> FetchResponse {
    let uses_topic_ids = version >= 13;
    let replica_id = if version >= 15 {
        r.replica_state.replica_id.0
    } else {
        r.replica_id.0
    };
    let isolation = if replica_id >= 0 {
        FetchIsolation::LogEnd
    } else if r.isolation_level == 1 {
        FetchIsolation::TxnCommitted
    } else {
        FetchIsolation::HighWatermark
    };
    let topic_ref = |name: &TopicName, id: Uuid| {
        if uses_topic_ids {
            TopicRef::Id(id)
        } else {
            TopicRef::Name(name.0.to_string())
        }
    };
    let requested = once_each(r.topics.iter().flat_map(|t| {
        let topic = topic_ref(&t.topic, t.topic_id);
        t.partitions.iter().map(move |p| {
            (
                PartKey {
                    topic: topic.clone(),
                    partition: p.partition,
                },
                FetchParams {
                    fetch_offset: p.fetch_offset,
                    max_bytes: p.partition_max_bytes,
                    current_leader_epoch: p.current_leader_epoch,
                    last_fetched_epoch: p.last_fetched_epoch,
                },
            )
        })
    }));
    let forgotten: Vec<PartKey> = r
        .forgotten_topics_data
        .iter()
        .flat_map(|t| {
            let topic = topic_ref(&t.topic, t.topic_id);
            t.partitions.iter().map(move |&partition| PartKey {
                topic: topic.clone(),
                partition,
            })
        })
        .collect();

    let now = b.clock().now_ms();
    let ctx = b.fetch_sessions.begin(
        r.session_id,
        r.session_epoch,
        uses_topic_ids,
        &requested,
        &forgotten,
        now,
    );
    let no_names = HashMap::new();
    let (to_read, names) = match &ctx {
        SessionContext::Error(code) => return error_response(*code, INVALID_SESSION_ID),
        SessionContext::Sessionless | SessionContext::Full => (requested, &no_names),
        SessionContext::Incremental { parts, names, .. } => (parts.clone(), names),
    };
    let specs = resolve(b, to_read, names);
    // Kafka's `erroneous`: the partitions `KafkaApis` finds unknown before the read.
    let erroneous: Vec<bool> = specs.iter().map(|s| !known(b, s)).collect();
    if !matches!(r.isolation_level, 0 | 1) && erroneous.contains(&false) {
        // Kafka's `FetchIsolation.of` reads the level (`IsolationLevel.forId` throws, whatever
        // the replica) once the request has a partition its metadata holds; the handler then
        // fails the whole request (`FetchRequest.getErrorResponse`).
        return failed_whole(&r, version, ResponseError::UnknownServerError.code());
    }
    let mut datas = read_with_wait(b, &r, &specs, isolation);
    if version <= 5 {
        // Kafka's `maybeDownConvertStorageError`: a client of Fetch v5 or older may not know
        // KAFKA_STORAGE_ERROR (it would be an unknown, fatal error there); NOT_LEADER_OR_FOLLOWER
        // has it refresh its metadata and retry.
        for d in &mut datas {
            if d.error_code == ResponseError::KafkaStorageError.code() {
                d.error_code = ResponseError::NotLeaderOrFollower.code();
            }
        }
    }
    let node_endpoints = if version >= 16 {
        name_current_leaders(b, &specs, &mut datas)
    } else {
        vec![]
    };
    // Kafka answers the partitions it read, then the ones it found unknown (its
    // `processResponseCallback`), each in request (or session) order; a session it creates
    // holds them in that order, and an incremental answer lists them so.
    let (mut read, unknown): (Vec<_>, Vec<_>) = specs
        .into_iter()
        .zip(datas)
        .zip(erroneous)
        .partition(|(_, erroneous)| !erroneous);
    read.extend(unknown);
    let read: Vec<(ReadSpec, PartitionData)> = read.into_iter().map(|(r, _)| r).collect();

    let now = b.clock().now_ms();
    let (session_id, entries) = match ctx {
        SessionContext::Error(_) => unreachable!("answered above"),
        SessionContext::Sessionless => (INVALID_SESSION_ID, read),
        SessionContext::Full => {
            let id = b.fetch_sessions.create(
                uses_topic_ids,
                replica_id >= 0,
                read.iter().map(|(s, d)| (s, d)),
                now,
            );
            (id, read)
        }
        SessionContext::Incremental { id, epoch, .. } => {
            match b.fetch_sessions.finish(id, epoch, read, now) {
                Ok(entries) => (id, entries),
                Err(code) => return error_response(code, id),
            }
        }
    };
    let mut resp = FetchResponse::default();
    resp.throttle_time_ms = 0;
    resp.error_code = 0;
    resp.session_id = session_id;
    resp.responses = group_by_topic(entries, uses_topic_ids);
    resp.node_endpoints = node_endpoints;
    resp
}

/// Fetch v16+ (KIP-951), as Kafka's `KafkaApis.handleFetchRequest`: a partition answered
/// `NOT_LEADER_OR_FOLLOWER` or `FENCED_LEADER_EPOCH` names its current leader (this node) and
/// leader epoch, and the response lists that leader's endpoint, so the client takes the new
/// epoch without a Metadata request. Returns the endpoints to list.
fn name_current_leaders(
    b: &Broker,
    specs: &[ReadSpec],
    datas: &mut [PartitionData],
) -> Vec<NodeEndpoint> {
    let mut leaders = CurrentLeaders::of(b);
    for (spec, d) in specs.iter().zip(datas.iter_mut()) {
        if d.error_code != ResponseError::NotLeaderOrFollower.code()
            && d.error_code != ResponseError::FencedLeaderEpoch.code()
        {
            continue;
        }
        if let Some(name) = spec.name.as_deref() {
            let (leader_id, leader_epoch) = leaders.name(name, spec.key.partition);
            d.current_leader.leader_id = leader_id;
            d.current_leader.leader_epoch = leader_epoch;
        }
    }
    node_endpoints!(leaders, NodeEndpoint)
}

/// A request's partitions as Kafka's `FetchRequest.fetchData` map holds them: a partition named
/// twice is read once, at its first position, with the parameters it was given last.
fn once_each(parts: impl Iterator<Item = (PartKey, FetchParams)>) -> Vec<(PartKey, FetchParams)> {
    let mut at: HashMap<PartKey, usize> = HashMap::new();
    let mut out: Vec<(PartKey, FetchParams)> = vec![];
    for (k, p) in parts {
        match at.get(&k) {
            Some(&i) => out[i].1 = p,
            None => {
                at.insert(k.clone(), out.len());
                out.push((k, p));
            }
        }
    }
    out
}

/// Whether the partition is one the topic registry holds (Kafka's `metadataCache.contains`),
/// whatever its log's state.
fn known(b: &Broker, spec: &ReadSpec) -> bool {
    spec.name
        .as_deref()
        .and_then(|n| b.topics.get(n))
        .is_some_and(|t| (0..t.partitions).contains(&spec.key.partition))
}

/// Kafka's `FetchRequest.getErrorResponse`: the top-level `code` and the request's session id;
/// before v13 also every partition the request names, in its order, with `code` (offsets -1).
fn failed_whole(r: &FetchRequest, version: i16, code: i16) -> FetchResponse {
    let mut resp = error_response(code, r.session_id);
    if version < 13 {
        for t in &r.topics {
            let mut out = FetchableTopicResponse::default();
            out.topic = t.topic.clone();
            out.topic_id = t.topic_id;
            for p in &t.partitions {
                let mut d = empty_partition(p.partition);
                d.error_code = code;
                out.partitions.push(d);
            }
            resp.responses.push(out);
        }
    }
    resp
}

fn error_response(code: i16, session_id: i32) -> FetchResponse {
    let mut resp = FetchResponse::default();
    resp.error_code = code;
    resp.session_id = session_id;
    resp
}

/// Resolves each partition's topic (once per topic) against the registry; a topic id whose
/// name a session kept (`names`) keeps that name, whether the registry still has it or not.
fn resolve(
    b: &Broker,
    parts: Vec<(PartKey, FetchParams)>,
    names: &HashMap<PartKey, String>,
) -> Vec<ReadSpec> {
    let mut known: HashMap<TopicRef, (Option<String>, Uuid)> = HashMap::new();
    parts
        .into_iter()
        .map(|(key, params)| {
            let (name, topic_id) = match (&key.topic, names.get(&key)) {
                (TopicRef::Id(id), Some(name)) => (Some(name.clone()), *id),
                _ => known
                    .entry(key.topic.clone())
                    .or_insert_with(|| match &key.topic {
                        TopicRef::Name(n) => (
                            Some(n.clone()),
                            b.topics.get(n).map_or(Uuid::nil(), |t| t.id),
                        ),
                        TopicRef::Id(id) => (b.topics.by_id(*id).map(|t| t.name), *id),
                    })
                    .clone(),
            };
            ReadSpec {
                key,
                name,
                topic_id,
                params,
            }
        })
        .collect()
}

/// Consecutive partitions of one topic share a topic entry; order is kept (Kafka's
/// `FetchResponse.toMessage`).
fn group_by_topic(
    entries: Vec<(ReadSpec, PartitionData)>,
    uses_topic_ids: bool,
) -> Vec<FetchableTopicResponse> {
    let mut out: Vec<(TopicRef, FetchableTopicResponse)> = vec![];
    for (spec, d) in entries {
        match out.last_mut() {
            Some((t, resp)) if *t == spec.key.topic => resp.partitions.push(d),
            _ => {
                let mut resp = FetchableTopicResponse::default();
                if uses_topic_ids {
                    resp.topic_id = spec.topic_id;
                } else if let TopicRef::Name(n) = &spec.key.topic {
                    resp.topic = TopicName(sb(n));
                }
                resp.partitions.push(d);
                out.push((spec.key.topic, resp));
            }
        }
    }
    out.into_iter().map(|(_, r)| r).collect()
}

/// Reads every partition, waiting for data as long as the request allows (see the module docs).
fn read_with_wait(
    b: &Broker,
    r: &FetchRequest,
    specs: &[ReadSpec],
    isolation: FetchIsolation,
) -> Vec<PartitionData> {
    let deadline = deadline_in(r.max_wait_ms);
    let max_bytes = r.max_bytes.min(b.config.fetch_max_bytes);
    // Kafka's `fetchMinBytes`: never more than the response may carry, or a fetch asking more
    // than `max_bytes` (or the broker's `fetch.max.bytes`) would wait out `max_wait_ms` with
    // its data there.
    let min_bytes = r.min_bytes.min(max_bytes).max(0) as u64;
    // Kafka's `ReplicaManager.fetchMessages`: the first read answers at once when it has
    // `min_bytes`, or an error or a diverging epoch in a partition it read. The partitions it
    // finds unknown (Kafka's `erroneous`, answered beside the read in `KafkaApis`) neither wait
    // nor end the wait; if nothing else is read, it answers at once.
    let (datas, bytes, starts) = read_all(b, specs, isolation, max_bytes);
    let answer_now = datas.iter().all(unknown_partition)
        || datas.iter().any(|d| {
            !unknown_partition(d)
                && (d.error_code != 0 || d.diverging_epoch != EpochEndOffset::default())
        });
    if r.max_wait_ms <= 0
        || specs.is_empty()
        || bytes >= min_bytes
        || answer_now
        || Instant::now() >= deadline
        || b.appends.is_closed()
        // Kafka's `DelayedFetch` is tried once before it waits.
        || delayed_fetch_done(b, specs, &starts, isolation, min_bytes)
    {
        return datas;
    }
    // Register on exactly the partitions read (a session's included), then check again: an
    // append between the check above and the registration is not missed. Each wake-up checks
    // where the bounds lie (no read); the answer is read once the wait is over.
    let interest = b.appends.register(wait_keys(specs));
    loop {
        interest.arm();
        if delayed_fetch_done(b, specs, &starts, isolation, min_bytes)
            || Instant::now() >= deadline
            || b.appends.is_closed()
        {
            return read_all(b, specs, isolation, max_bytes).0;
        }
        interest.wait(deadline);
    }
}

/// Kafka's `DelayedFetch.tryComplete`: whether a waiting fetch is done, judged from where each
/// partition's first read started (`starts`; `None` for a partition it did not read) and where its
/// bound lies now. Done when a partition is gone, offline, fenced or diverging (the answer reads
/// its error), when a fetch offset is below the log start or above its bound (a READ_COMMITTED
/// fetch above the last stable offset), when its log was truncated since the read, when a bound
/// lies in a later segment than the read (which stops at its segment's end), or when the bytes
/// between read and bound, each capped at its partition's `partition_max_bytes`, reach `min_bytes`.
fn delayed_fetch_done(
    b: &Broker,
    specs: &[ReadSpec],
    starts: &[Option<LogPosition>],
    isolation: FetchIsolation,
    min_bytes: u64,
) -> bool {
    let mut accumulated = 0u64;
    for (spec, start) in specs.iter().zip(starts) {
        let Some(start) = start else { continue };
        let Ok(h) = partition_to_read(b, spec) else {
            return true;
        };
        let log = h.read();
        if leader_epoch_error(&log, &spec.params, isolation).is_some()
            || !matches!(
                divergence(&log, &spec.params),
                None | Some(EpochCheck::Consistent)
            )
        {
            return true;
        }
        // Below the log start (DeleteRecords, which wakes the waiting fetches for this): the
        // answer is OFFSET_OUT_OF_RANGE now, not at the deadline. Kafka's `DelayedFetch` looks
        // at no log start.
        if start.offset < log.log_start_offset() {
            return true;
        }
        let Ok(end) = log.bound_position(isolation) else {
            return true;
        };
        // Truncated since the read (a mirror aligning its log, which may have appended past
        // the fetch offset again): the read's position names bytes that may be gone, and
        // compares with no bound; the answer reads the log as it is now.
        if start.truncations != end.truncations || start.offset > end.offset {
            return true;
        }
        if start.offset < end.offset {
            if start.segment_base < end.segment_base {
                return true;
            }
            if start.segment_base == end.segment_base {
                let available = end.position.get().saturating_sub(start.position.get());
                accumulated += u64::from(available).min(spec.params.max_bytes.max(0) as u64);
            }
        }
    }
    accumulated >= min_bytes
}

/// Whether a read found no such partition: its topic id or name is unknown, or the topic has
/// fewer partitions (Kafka answers these in `KafkaApis`, before `ReplicaManager` reads).
fn unknown_partition(d: &PartitionData) -> bool {
    d.error_code == ResponseError::UnknownTopicId.code()
        || d.error_code == ResponseError::UnknownTopicOrPartition.code()
}

/// The (topic name, partition) keys a long poll waits on. A partition whose topic id is
/// unknown has no name; it is answered with its error beside the others.
fn wait_keys(specs: &[ReadSpec]) -> Vec<(String, i32)> {
    specs
        .iter()
        .filter_map(|s| Some((s.name.clone()?, s.key.partition)))
        .collect()
}

/// One pass over the partitions with Kafka's byte accounting. Returns the partitions' data, the
/// record bytes read, and where each read started (`None` for a partition answered with an
/// error or a diverging epoch).
fn read_all(
    b: &Broker,
    specs: &[ReadSpec],
    isolation: FetchIsolation,
    max_bytes: i32,
) -> (Vec<PartitionData>, u64, Vec<Option<LogPosition>>) {
    // Kafka's `limitBytes`: a negative `max_bytes` stays negative until a partition is read
    // (then it is at least 0); a partition Kafka finds unknown is not read there.
    let mut remaining = i64::from(max_bytes);
    let mut min_one_batch = true;
    let mut total = 0u64;
    let mut out = Vec::with_capacity(specs.len());
    let mut starts = Vec::with_capacity(specs.len());
    for spec in specs {
        let (d, start) = read_partition(b, spec, isolation, remaining, min_one_batch);
        let n = d.records.as_ref().map_or(0, |r| r.len() as u64);
        if n > 0 {
            min_one_batch = false;
        }
        if !unknown_partition(&d) {
            remaining = (remaining - n as i64).max(0);
        }
        total += n;
        out.push(d);
        starts.push(start);
    }
    (out, total, starts)
}

/// A partition's answer with no records and unknown offsets.
fn empty_partition(partition: i32) -> PartitionData {
    let mut d = PartitionData::default();
    d.partition_index = partition;
    d.high_watermark = UNKNOWN;
    d.last_stable_offset = UNKNOWN;
    d.log_start_offset = UNKNOWN;
    d.aborted_transactions = None;
    d.preferred_read_replica = (-1).into();
    d.records = Some(Bytes::new());
    d
}

/// Kafka's checks before a read, in its order (`ReplicaManager.getPartitionOrException`, the
/// topic id, the log directory): the partition, or the error to answer.
fn partition_to_read(b: &Broker, spec: &ReadSpec) -> Result<Arc<PartitionHandle>, i16> {
    let Some(name) = &spec.name else {
        return Err(ResponseError::UnknownTopicId.code());
    };
    let Some(h) = b.partition(name, spec.key.partition) else {
        return Err(b.missing_partition_error(name, spec.key.partition).code());
    };
    if !spec.topic_id.is_nil() && crate::topics::topic_id_to_uuid(h.topic_id()) != spec.topic_id {
        // The topic was deleted and recreated under the same name while this fetch waited:
        // the partition found by name is another topic's, and serving it would splice two
        // topics' offsets into one consumer (or mirror).
        return Err(match spec.key.topic {
            // As Kafka's `readFromLog`: the log's topic id is not the one the fetch names.
            TopicRef::Id(_) => ResponseError::InconsistentTopicId.code(),
            TopicRef::Name(_) => ResponseError::UnknownTopicOrPartition.code(),
        });
    }
    if h.check_online().is_err() {
        // Its log dir went offline after a storage failure: serve nothing from it.
        return Err(ResponseError::KafkaStorageError.code());
    }
    Ok(h)
}

/// Kafka's `Partition.localLogWithEpochOrThrow`: the request's `current_leader_epoch` against
/// ours, then, for a fetch from a replica, `NOT_LEADER_OR_FOLLOWER` (this single node has no
/// follower replicas: as Kafka's leader answers a replica outside the assignment,
/// `followerReplicaOrThrow`, nothing is served — a client posing as a follower must not read
/// past the high watermark).
fn leader_epoch_error(
    log: &PartitionLog,
    p: &FetchParams,
    isolation: FetchIsolation,
) -> Option<i16> {
    let ours = log.leader_epoch().get().max(0);
    if p.current_leader_epoch >= 0 {
        if p.current_leader_epoch > ours {
            return Some(ResponseError::UnknownLeaderEpoch.code());
        }
        if p.current_leader_epoch < ours {
            return Some(ResponseError::FencedLeaderEpoch.code());
        }
    }
    (isolation == FetchIsolation::LogEnd).then(|| {
        if p.current_leader_epoch >= 0 {
            ResponseError::UnknownLeaderEpoch.code()
        } else {
            ResponseError::NotLeaderOrFollower.code()
        }
    })
}

/// The `last_fetched_epoch` check ([`check_last_fetched_epoch`]), when the fetch names one.
fn divergence(log: &PartitionLog, p: &FetchParams) -> Option<EpochCheck> {
    (p.last_fetched_epoch >= 0).then(|| {
        let (e, end) = log
            .epoch_cache()
            .end_offset_for(LeaderEpoch(p.last_fetched_epoch), log.log_end_offset());
        check_last_fetched_epoch(
            (e.get(), end.get()),
            p.last_fetched_epoch,
            p.fetch_offset,
            log.log_start_offset().get(),
        )
    })
}

/// Whether a read at `start` reaches a segment in Kafka's `LocalLog.read`: `start` is in the log
/// and below the bound of `isolation` (at or above it, Kafka answers an empty read without
/// reading; outside the log, `OFFSET_OUT_OF_RANGE`).
fn has_data_to_read(log: &PartitionLog, start: Offset, isolation: FetchIsolation) -> bool {
    let bound = match isolation {
        FetchIsolation::LogEnd => log.log_end_offset(),
        FetchIsolation::HighWatermark => log.high_watermark(),
        FetchIsolation::TxnCommitted => log.last_stable_offset(),
    };
    start >= log.log_start_offset() && start < bound
}

/// Kafka's `Partition.fetchRecords` for one partition, as leader of everything: its answer, and
/// where the read started (`None` when answered with an error or a diverging epoch).
fn read_partition(
    b: &Broker,
    spec: &ReadSpec,
    isolation: FetchIsolation,
    limit: i64,
    min_one_batch: bool,
) -> (PartitionData, Option<LogPosition>) {
    let mut d = empty_partition(spec.key.partition);
    let h = match partition_to_read(b, spec) {
        Ok(h) => h,
        Err(code) => {
            d.error_code = code;
            return (d, None);
        }
    };
    let p = spec.params;
    let log = h.read();
    if let Some(code) = leader_epoch_error(&log, &p, isolation) {
        d.error_code = code;
        return (d, None);
    }
    // As every read error in Kafka's `ReplicaManager.readFromLog` (`LogReadResult(error)`):
    // high watermark, last stable offset and log start offset unknown (−1), no records. A
    // fetcher learns the log's bounds from ListOffsets, as Kafka's own do.
    match divergence(&log, &p) {
        None | Some(EpochCheck::Consistent) => {}
        Some(EpochCheck::OutOfRange) => {
            d.error_code = ResponseError::OffsetOutOfRange.code();
            return (d, None);
        }
        Some(EpochCheck::Diverging { epoch, end_offset }) => {
            let mut de = EpochEndOffset::default();
            de.epoch = epoch;
            de.end_offset = end_offset;
            d.diverging_epoch = de;
            d.high_watermark = log.high_watermark().get();
            d.last_stable_offset = log.last_stable_offset().get();
            d.log_start_offset = log.log_start_offset().get();
            // Kafka's `Partition.readRecords` answers a diverging epoch with an empty read
            // without aborted transactions (null), whatever the isolation level.
            return (d, None);
        }
    }
    // Kafka's `adjustedMaxBytes`, negative when the partition's or the request's limit is.
    let max = i64::from(p.max_bytes).min(limit);
    if max < 0 && has_data_to_read(&log, Offset(p.fetch_offset), isolation) {
        // Kafka's `LogSegment.read` refuses a negative size (`IllegalArgumentException`) once a
        // read reaches a segment, which it does only with data below the bound to read; its
        // `readFromLog` answers that as any unexpected error.
        d.error_code = ResponseError::UnknownServerError.code();
        return (d, None);
    }
    let max = max.clamp(0, i64::from(u32::MAX)) as u32;
    let info = match log.read(Offset(p.fetch_offset), max, isolation, min_one_batch) {
        Ok(info) => info,
        Err(e) => {
            d.error_code = match e {
                EngineError::OffsetOutOfRange { .. } => ResponseError::OffsetOutOfRange.code(),
                e => engine_error_code(&e),
            };
            return (d, None);
        }
    };
    // The slice stays valid without the lock (the file is held open); don't block appends
    // while copying it.
    drop(log);
    let start = Some(info.fetch_position);
    d.high_watermark = info.high_watermark.get();
    d.last_stable_offset = info.last_stable_offset.get();
    d.log_start_offset = info.log_start_offset.get();
    d.aborted_transactions = info.aborted_transactions.map(|txns| {
        txns.into_iter()
            .map(|t| {
                let mut a = AbortedTransaction::default();
                a.producer_id = ProducerId(t.producer_id.get());
                a.first_offset = t.first_offset.get();
                a
            })
            .collect()
    });
    if let Some(data) = info.records {
        if data.first_entry_incomplete {
            // Kafka's `ReplicaManager.readFromLog` (`checkFetchDataInfo`): no records, and no
            // aborted transactions, rather than part of a batch and nothing whole — a client
            // cannot move past that (the Java consumer fails "no complete records were found"),
            // and the bytes would count against `max_bytes` and `min_bytes`.
            d.aborted_transactions = None;
            return (d, start);
        }
        match data.slice.read_all() {
            Ok(bytes) => d.records = Some(bytes),
            Err(e) => {
                tracing::error!(partition = %h.topic_partition(), "fetch read failed: {}", ErrorChain(&e));
                let mut empty = empty_partition(spec.key.partition);
                empty.error_code = ResponseError::KafkaStorageError.code();
                return (empty, None);
            }
        }
    }
    (d, start)
}

#[cfg(test)]
mod tests {
    use super::*;
    use mirrorlog_engine::epoch_cache::LeaderEpochCache;

    fn key(t: &str, p: i32) -> PartKey {
        PartKey {
            topic: TopicRef::Name(t.into()),
            partition: p,
        }
    }

    fn params(offset: i64) -> FetchParams {
        FetchParams {
            fetch_offset: offset,
            max_bytes: 1 << 20,
            current_leader_epoch: -1,
            last_fetched_epoch: -1,
        }
    }

    fn data(hw: i64, records: &[u8]) -> PartitionData {
        let mut d = empty_partition(0);
        d.high_watermark = hw;
        d.last_stable_offset = hw;
        d.log_start_offset = 0;
        d.records = Some(Bytes::copy_from_slice(records));
        d
    }

    fn spec(k: &PartKey) -> ReadSpec {
        ReadSpec {
            key: k.clone(),
            name: None,
            topic_id: Uuid::nil(),
            params: params(0),
        }
    }

    /// A full request creating a session over `parts`, each told HW `hw`.
    fn open(cache: &FetchSessionCache, parts: &[PartKey], hw: i64, now: i64) -> i32 {
        assert_eq!(
            cache.begin(0, 0, false, &[], &[], now),
            SessionContext::Full
        );
        let d = data(hw, b"");
        let specs: Vec<ReadSpec> = parts.iter().map(spec).collect();
        cache.create(false, false, specs.iter().map(|s| (s, &d)), now)
    }

    #[test]
    fn diverging_epoch_follows_kafka() {
        // Epochs 0@0, 2@10, 4@20; LEO 30; log start 0.
        let mut c = LeaderEpochCache::in_memory();
        for (e, o) in [(0, 0), (2, 10), (4, 20)] {
            c.assign(LeaderEpoch(e), Offset(o)).unwrap();
        }
        let check = |last: i32, fetch: i64, start: i64| {
            let (e, o) = c.end_offset_for(LeaderEpoch(last), Offset(30));
            check_last_fetched_epoch((e.get(), o.get()), last, fetch, start)
        };
        // The latest epoch ends at the LEO: any offset up to it is fine.
        assert_eq!(check(4, 30, 0), EpochCheck::Consistent);
        assert_eq!(check(4, 25, 0), EpochCheck::Consistent);
        // Epoch 2 ends at 20: fetching at 20 is consistent, past it diverges.
        assert_eq!(check(2, 20, 0), EpochCheck::Consistent);
        assert_eq!(
            check(2, 23, 0),
            EpochCheck::Diverging {
                epoch: 2,
                end_offset: 20
            }
        );
        // Epoch 3 is unknown here: the floor epoch 2 (< 3) diverges even at a small offset.
        assert_eq!(
            check(3, 12, 0),
            EpochCheck::Diverging {
                epoch: 2,
                end_offset: 20
            }
        );
        // An epoch above everything known cannot be placed.
        assert_eq!(check(5, 30, 0), EpochCheck::OutOfRange);
        // Below the log start: out of range even when diverging.
        assert_eq!(check(2, 23, 25), EpochCheck::OutOfRange);
        // An empty cache knows no epoch.
        let empty = LeaderEpochCache::in_memory();
        let (e, o) = empty.end_offset_for(LeaderEpoch(0), Offset(0));
        assert_eq!(
            check_last_fetched_epoch((e.get(), o.get()), 0, 0, 0),
            EpochCheck::OutOfRange
        );
    }

    #[test]
    fn next_epoch_wraps_to_one_and_final_stays_final() {
        assert_eq!(next_epoch(0), 1);
        assert_eq!(next_epoch(7), 8);
        assert_eq!(next_epoch(i32::MAX), 1);
        assert_eq!(next_epoch(-1), -1);
    }

    #[test]
    fn full_requests_create_close_or_skip_sessions() {
        let cache = FetchSessionCache::default();
        let id = open(&cache, &[key("t", 0)], 5, 0);
        assert_ne!(id, 0);
        assert_eq!(cache.len(), 1);
        // Epoch -1 with the id closes it and fetches without a session.
        assert_eq!(
            cache.begin(id, -1, false, &[], &[], 1),
            SessionContext::Sessionless
        );
        assert!(cache.is_empty());
        // Id + epoch 0 closes the old session and opens another.
        let id = open(&cache, &[key("t", 0)], 5, 2);
        assert_eq!(cache.begin(id, 0, false, &[], &[], 3), SessionContext::Full);
        assert!(cache.is_empty());
    }

    #[test]
    fn incremental_requests_check_id_epoch_and_naming() {
        let cache = FetchSessionCache::default();
        let id = open(&cache, &[key("t", 0)], 5, 0);
        let code = |c: SessionContext| match c {
            SessionContext::Error(e) => e,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            code(cache.begin(id.wrapping_add(1).max(1), 1, false, &[], &[], 1)),
            70
        );
        assert_eq!(code(cache.begin(0, 1, false, &[], &[], 1)), 70);
        assert_eq!(code(cache.begin(id, 2, false, &[], &[], 1)), 71);
        assert_eq!(code(cache.begin(id, 1, true, &[], &[], 1)), 106);
        // The right epoch works, once.
        assert!(matches!(
            cache.begin(id, 1, false, &[], &[], 1),
            SessionContext::Incremental { epoch: 2, .. }
        ));
        assert_eq!(code(cache.begin(id, 1, false, &[], &[], 1)), 71);
        assert!(matches!(
            cache.begin(id, 2, false, &[], &[], 1),
            SessionContext::Incremental { epoch: 3, .. }
        ));
    }

    #[test]
    fn incremental_requests_add_update_and_forget_partitions() {
        let cache = FetchSessionCache::default();
        let (a, b, c) = (key("t", 0), key("t", 1), key("u", 0));
        let id = open(&cache, &[a.clone(), b.clone()], 5, 0);
        let ctx = cache.begin(
            id,
            1,
            false,
            &[(b.clone(), params(4)), (c.clone(), params(9))],
            std::slice::from_ref(&a),
            1,
        );
        let SessionContext::Incremental { parts, .. } = ctx else {
            panic!("{ctx:?}")
        };
        assert_eq!(parts, vec![(b.clone(), params(4)), (c.clone(), params(9))]);
        // Forgetting everything closes the session.
        assert_eq!(
            cache.begin(id, 2, false, &[], &[b, c], 2),
            SessionContext::Sessionless
        );
        assert!(cache.is_empty());
    }

    #[test]
    fn incremental_responses_carry_only_changes() {
        let cache = FetchSessionCache::default();
        let (a, b) = (key("t", 0), key("t", 1));
        let id = open(&cache, &[a.clone(), b.clone()], 5, 0);
        let round = |epoch: i32, read: Vec<(&PartKey, PartitionData)>| {
            let SessionContext::Incremental {
                epoch: e, parts, ..
            } = cache.begin(id, epoch, false, &[], &[], 0)
            else {
                panic!()
            };
            let read = read.into_iter().map(|(k, d)| (spec(k), d)).collect();
            let out = cache.finish(id, e, read, 0).unwrap();
            (
                parts.into_iter().map(|(k, _)| k).collect::<Vec<_>>(),
                out.into_iter().map(|(s, _)| s.key).collect::<Vec<_>>(),
            )
        };
        // Nothing changed: nothing sent.
        let (_, sent) = round(1, vec![(&a, data(5, b"")), (&b, data(5, b""))]);
        assert!(sent.is_empty());
        // A new HW on b only.
        let (_, sent) = round(2, vec![(&a, data(5, b"")), (&b, data(6, b""))]);
        assert_eq!(sent, vec![b.clone()]);
        // Records on a: sent, and a moves to the back of the order.
        let (order, sent) = round(3, vec![(&a, data(5, b"xyz")), (&b, data(6, b""))]);
        assert_eq!(order, vec![a.clone(), b.clone()]);
        assert_eq!(sent, vec![a.clone()]);
        // An error is always sent, and again once it clears.
        let mut err = data(-1, b"");
        err.error_code = 1;
        let (order, sent) = round(4, vec![(&b, data(6, b"")), (&a, err)]);
        assert_eq!(order, vec![b.clone(), a.clone()]);
        assert_eq!(sent, vec![a.clone()]);
        let (_, sent) = round(5, vec![(&b, data(6, b"")), (&a, data(5, b""))]);
        assert_eq!(sent, vec![a.clone()]);
    }

    #[test]
    fn a_concurrent_request_on_the_session_fails_the_older_one() {
        let cache = FetchSessionCache::default();
        let a = key("t", 0);
        let id = open(&cache, std::slice::from_ref(&a), 5, 0);
        let SessionContext::Incremental { epoch: first, .. } =
            cache.begin(id, 1, false, &[], &[], 0)
        else {
            panic!()
        };
        let SessionContext::Incremental { epoch: second, .. } =
            cache.begin(id, 2, false, &[], &[], 0)
        else {
            panic!()
        };
        assert_eq!(
            cache
                .finish(id, first, vec![(spec(&a), data(5, b""))], 0)
                .unwrap_err(),
            71
        );
        assert!(
            cache
                .finish(id, second, vec![(spec(&a), data(5, b""))], 0)
                .is_ok()
        );
    }

    #[test]
    fn the_cache_is_bounded_and_evicts_as_kafka() {
        let cache = FetchSessionCache::new(2, 100);
        let s1 = open(&cache, &[key("t", 0)], 0, 0);
        let s2 = open(&cache, &[key("t", 0), key("t", 1)], 0, 10);
        assert!(s1 != 0 && s2 != 0);
        // Full, nothing stale or old enough: no session for a new consumer.
        assert_eq!(
            open(&cache, &[key("t", 0), key("t", 1), key("t", 2)], 0, 50),
            0
        );
        // A replica's session evicts the least valuable consumer session (s1, one partition).
        let d = data(0, b"");
        let k = spec(&key("r", 0));
        let r = cache.create(false, true, std::iter::once((&k, &d)), 60);
        assert_ne!(r, 0);
        assert!(matches!(
            cache.begin(s1, 1, false, &[], &[], 60),
            SessionContext::Error(70)
        ));
        // Past the eviction time the least recently used session goes.
        assert!(matches!(
            cache.begin(r, 1, false, &[], &[], 150),
            SessionContext::Incremental { .. }
        ));
        let s3 = open(&cache, &[key("t", 9)], 0, 200);
        assert_ne!(s3, 0);
        assert!(matches!(
            cache.begin(s2, 1, false, &[], &[], 200),
            SessionContext::Error(70)
        ));
        // Idle sessions stay while nothing needs their slot.
        assert_eq!(cache.len(), 2);
        // No slots: no sessions.
        let none = FetchSessionCache::new(0, 100);
        assert_eq!(open(&none, &[key("t", 0)], 0, 0), 0);
    }

    /// Kafka's `ReplicaManager.readFromLog`: a partition found by name whose log has another
    /// topic id than the one the fetch (or its session) names — the topic was deleted and
    /// recreated since the request's topic id was resolved — is INCONSISTENT_TOPIC_ID (103), not
    /// UNKNOWN_TOPIC_ID.
    #[test]
    fn a_recreated_topic_under_a_resolved_id_is_inconsistent_topic_id() {
        use crate::broker::BrokerConfig;
        use mirrorlog_engine::clock::ManualClock;
        use mirrorlog_engine::config::LogConfig;
        use mirrorlog_segment::io::PwriteStorage;
        let dir = tempfile::tempdir().unwrap();
        let b = Broker::open(
            BrokerConfig::new(dir.path(), "127.0.0.1", 9092),
            std::sync::Arc::new(PwriteStorage::new()),
            ManualClock::new(1_700_000_000_000),
        )
        .unwrap();
        let old = b
            .topics
            .create(&b.logs, "t", 1, LogConfig::default(), None)
            .unwrap()
            .id;
        let key = PartKey {
            topic: TopicRef::Id(old),
            partition: 0,
        };
        let params = FetchParams {
            fetch_offset: 0,
            max_bytes: 1 << 20,
            current_leader_epoch: -1,
            last_fetched_epoch: -1,
        };
        // Resolved while the old topic exists (as a long poll's first pass does)...
        let specs = resolve(&b, vec![(key, params)], &HashMap::new());
        // ...then the topic is deleted and created again under a new id.
        b.topics.delete(&b.logs, "t").unwrap();
        b.topics
            .create(&b.logs, "t", 1, LogConfig::default(), None)
            .unwrap();
        let (d, _) = read_partition(&b, &specs[0], FetchIsolation::HighWatermark, 1 << 20, true);
        assert_eq!(d.error_code, ResponseError::InconsistentTopicId.code());
    }
}
