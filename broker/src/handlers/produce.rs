//! Produce (v3–v11): one batch per partition appended as leader through the engine.
//!
//! First, as Kafka's `RequestUtils.hasTransactionalRecords` frames the partitions' first
//! batches (up to the first transactional one), a corrupt one fails the whole request
//! (`CORRUPT_MESSAGE` with its message, in every partition), and so do transactional records
//! without a transactional id (`TRANSACTIONAL_ID_AUTHORIZATION_FAILED`). Then per partition, in
//! Kafka's order: the topic and partition must exist (`UNKNOWN_TOPIC_OR_PARTITION`), the
//! records must hold exactly one whole v2 batch (`INVALID_RECORD`; a length or magic Kafka's
//! batch iterator finds corrupt `CORRUPT_MESSAGE`; a partial batch after it is dropped, as that
//! iterator ends there and Kafka's log appends only the whole batches; ZStandard needs v7+,
//! `UNSUPPORTED_COMPRESSION_TYPE`, and before v7 a codec id Kafka does not know, 5–7, fails the
//! whole request `UNKNOWN_SERVER_ERROR`, as its `CompressionType.forId` throws there), a batch
//! too short to hold the producer fields Kafka's `handleProduceAppend` reads fails the whole
//! request `UNKNOWN_SERVER_ERROR` (Kafka reads past its end), one transactional producer per
//! request (below), the
//! transaction verification (below), `acks` must be 0, 1 or −1 (`INVALID_REQUIRED_ACKS`),
//! internal topics are refused (`INVALID_TOPIC_EXCEPTION`) but to the client id
//! [`ADMIN_CLIENT_ID`], a partition of a data directory offline since start fails here
//! (`KAFKA_STORAGE_ERROR`: Kafka's metadata has it, only its log append fails), then the engine
//! validates and appends the batch as leader, stamped with the partition's leader epoch (an
//! unknown codec id from v7, or compressed records that do not decompress, is the partition's
//! `UNKNOWN_SERVER_ERROR` there, as Kafka's log throws no `CorruptRecordException` for them). A
//! partition named twice is appended once, with its last entry's records, and answered once, as
//! Kafka keys a request's partitions by topic-partition.
//!
//! - `acks = -1`: the batches are appended in request order at once
//!   ([`PartitionHandle::append_as_leader_unsynced`]); the answer then waits for the group-commit
//!   `fdatasync` of each ([`PartitionHandle::wait_durable`]) — through the server
//!   ([`Reply::Later`]): on the connection's writer thread when more requests follow, so the
//!   connection's next requests are appended meanwhile and share the sync rather than each
//!   paying one (on the reading thread itself when none has arrived yet): the writer waits for
//!   them one after another, and a request whose append the previous request's sync already
//!   covered (it syncs everything appended before it started) waits for nothing. The syncs of one request's partitions are
//!   waited for side by side (the writer thread and pooled helper threads, [`DurableWaiters`]),
//!   so they share group-commit rounds too.
//! - `acks = 1` / `0`: [`PartitionLog::append_as_leader`](mirrorlog_engine::log::PartitionLog)
//!   under the partition lock; durability follows the topic's flush policy.
//!
//! After every successful append the high watermark moves to the log end (a single node is its
//! own ISR) and waiting long-poll fetches are woken. A failure in one partition never affects
//! the others (but for transactional batches of two producers, below). A retried batch the
//! producer state recognises as a duplicate is answered with the original base offset and no
//! error, as Kafka does. `acks = 0` gets no response at all.
//!
//! Transactional batches are verified with the transaction coordinator first (KIP-890 part 1,
//! on by default since Kafka 3.6; [`crate::txn::TxnVerifier`]): with the request's
//! `transactional_id`, the batch is appended only if its partition is in the producer's open
//! transaction, and while that transaction cannot end; otherwise nothing is appended and the
//! partition is answered as Kafka's `ReplicaManager` answers — `INVALID_TXN_STATE` ("Partition
//! was not added to the transaction"; `TRANSACTION_ABORTABLE` from Produce v11), `INVALID_PRODUCER_EPOCH` for a fenced producer,
//! `INVALID_PRODUCER_ID_MAPPING`, or the retriable `NOT_ENOUGH_REPLICAS` while the previous
//! transaction's markers are being written. Without a transactional id, a transactional batch
//! may only continue a transaction the producer already has open in the partition
//! ([`LeaderOrigin::ClientUnverified`]). Transactional batches of more than one producer (id
//! and epoch) in one request fail it as a whole (`INVALID_PRODUCER_ID_MAPPING`), as in Kafka's
//! `ReplicaManager.handleProduceAppend`. The rest of the transactional state (epochs,
//! sequences, a plain batch inside an open transaction) is the engine's producer state.
//!
//! A partition's `error_message` (v8+) is set where Kafka sets one, with Kafka's words: invalid
//! timestamps (its `RecordValidationException`, with one `record_errors` entry per record), the
//! verification errors `ReplicaManager` translates, and the whole-request
//! `INVALID_PRODUCER_ID_MAPPING`; every other error is answered without one.
//!
//! From v10 (KIP-951) a partition answered `NOT_LEADER_OR_FOLLOWER` names its current leader
//! (this node) and leader epoch, and the response lists this node in `node_endpoints`, as Kafka's
//! `handleProduceRequest` does; no other error names one. This broker answers a Produce partition
//! `NOT_LEADER_OR_FOLLOWER` only when an `acks = -1` append is undone by a truncation (a mirror's
//! log alignment) before its sync.

use crate::broker::Broker;
use crate::errors::engine_error_code;
use crate::handlers::current_leader::{CurrentLeaders, node_endpoints};
use crate::server::Reply;
use crate::topics::{INTERNAL_TOPICS, sb};
use crate::txn::TxnError;
use bytes::Bytes;
use kafka_protocol::ResponseError;
use kafka_protocol::messages::produce_request::TopicProduceData;
use kafka_protocol::messages::produce_response::{
    BatchIndexAndErrorMessage, NodeEndpoint, PartitionProduceResponse, TopicProduceResponse,
};
use kafka_protocol::messages::{ProduceRequest, ProduceResponse, ResponseKind, TopicName};
use mirrorlog_engine::error::{EngineError, EngineResult};
use mirrorlog_engine::log::{LeaderOrigin, LogAppendInfo};
use mirrorlog_engine::manager::{PartitionHandle, PendingSync};
use mirrorlog_index::{LeaderEpoch, TopicPartition};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::sync::Arc;

/// The most partitions of one `acks = -1` request whose syncs are waited for at the same time.
const MAX_PARALLEL_DURABLE_APPENDS: usize = 16;

/// Byte offsets in a RecordBatch v2 header; the length field ends the log overhead (12 bytes).
const LENGTH_AT: usize = 8;
const LOG_OVERHEAD: usize = 12;
const MAGIC_AT: usize = 16;
const ATTRIBUTES_AT: usize = 21;
const PRODUCER_ID_AT: usize = 43;
const PRODUCER_EPOCH_AT: usize = 51;
const BASE_SEQUENCE_AT: usize = 53;
/// Attributes bit: transactional.
const TRANSACTIONAL_BIT: i16 = 0x10;
/// Kafka's codec id of ZStandard (attributes bits 0–2), the highest it knows.
const ZSTD_CODEC: i16 = 4;
/// The first Produce version that may carry ZStandard, and whose `validateRecords` no longer
/// reads a batch's codec.
const ZSTD_SINCE: i16 = 7;
/// The smallest length field Kafka's batch iterator accepts (`RECORD_OVERHEAD_V0`, a v0
/// message's): below it the bytes are corrupt, not a partial batch.
const MIN_BATCH_LENGTH: i32 = 14;

/// One partition waiting for its append.
struct Job {
    topic: usize,
    partition: usize,
    handle: Arc<PartitionHandle>,
    records: Bytes,
    /// The request's transactional id.
    transactional_id: Option<Arc<str>>,
    /// What the replica manager's checks after the transaction verification answer
    /// ([`appendable`]): the append runs only on `Ok`.
    appendable: Result<(), Refusal>,
}

/// Kafka's `AdminUtils.ADMIN_CLIENT_ID`: the client id whose Produce may append to an internal
/// topic (`KafkaApis.handleProduceRequest`'s `internalTopicsAllowed`).
pub const ADMIN_CLIENT_ID: &str = "__admin_client";

/// Answers a Produce request; `None` for `acks = 0` (Kafka sends no response).
pub fn handle(b: &Broker, r: ProduceRequest, version: i16) -> Option<ProduceResponse> {
    handle_from(b, r, version, None)
}

/// As [`handle`], for a request whose header carries `client_id`.
pub fn handle_from(
    b: &Broker,
    r: ProduceRequest,
    version: i16,
    client_id: Option<&str>,
) -> Option<ProduceResponse> {
    let (acks, responses, jobs) = prepare(b, r, version, client_id);
    if acks == -1 {
        return Some(durable(b, responses, jobs, version)());
    }
    let responses = append_all(b, responses, jobs, version);
    (acks != 0).then(|| produce_response(responses, current_leaders(b, version)))
}

/// Appends `jobs` (acks 0 or 1) and fills in their responses.
fn append_all(
    b: &Broker,
    mut responses: Vec<TopicProduceResponse>,
    jobs: Vec<Job>,
    version: i16,
) -> Vec<TopicProduceResponse> {
    for job in jobs {
        let resp = &mut responses[job.topic].partition_responses[job.partition];
        match verified_append(b, &job, version, |origin| {
            append(b, &job.handle, job.records.clone(), origin)
        })
        .and_then(|r| r)
        {
            Ok(result) => fill(resp, &job.handle, result, version),
            Err(refused) => refuse(resp, refused, version),
        }
    }
    responses
}

/// As [`handle`], but an `acks = -1` request answers with [`Reply::Later`]: appended now, in
/// order, and waiting for its syncs on the connection's writer thread.
pub fn handle_pipelined(
    b: &Broker,
    r: ProduceRequest,
    version: i16,
    client_id: Option<&str>,
) -> Reply {
    if r.acks == 0 {
        // Kafka closes the connection when an acks=0 request fails in any partition.
        let (_, responses, jobs) = prepare(b, r, version, client_id);
        let responses = append_all(b, responses, jobs, version);
        let failed = responses
            .iter()
            .flat_map(|t| &t.partition_responses)
            .any(|p| p.error_code != 0);
        return if failed { Reply::Close } else { Reply::None };
    }
    if r.acks != -1 {
        return handle_from(b, r, version, client_id)
            .map(ResponseKind::Produce)
            .into();
    }
    let (_, responses, jobs) = prepare(b, r, version, client_id);
    let finish = durable(b, responses, jobs, version);
    Reply::Later(Box::new(move || ResponseKind::Produce(finish())))
}

/// The first Produce version whose `NOT_LEADER_OR_FOLLOWER` names the current leader
/// (KIP-951).
const CURRENT_LEADER_SINCE: i16 = 10;

/// What names the current leaders in a response of Produce `version`: `None` below v10.
fn current_leaders(b: &Broker, version: i16) -> Option<CurrentLeaders> {
    (version >= CURRENT_LEADER_SINCE).then(|| CurrentLeaders::of(b))
}

/// The response of `responses`. With `leaders` (v10+), as Kafka's `handleProduceRequest`
/// (KIP-951): every partition answered `NOT_LEADER_OR_FOLLOWER` — here an `acks = -1` append a
/// truncation undid before its sync — names its current leader and leader epoch, and the
/// response lists that leader's endpoint; no other error does.
fn produce_response(
    mut responses: Vec<TopicProduceResponse>,
    leaders: Option<CurrentLeaders>,
) -> ProduceResponse {
    let mut out = ProduceResponse::default();
    if let Some(mut leaders) = leaders {
        for t in &mut responses {
            for p in &mut t.partition_responses {
                if p.error_code == ResponseError::NotLeaderOrFollower.code() {
                    let (leader_id, leader_epoch) = leaders.name(&t.name.0, p.index);
                    p.current_leader.leader_id = leader_id;
                    p.current_leader.leader_epoch = leader_epoch;
                }
            }
        }
        out.node_endpoints = node_endpoints!(leaders, NodeEndpoint);
    }
    out.responses = responses;
    out.throttle_time_ms = 0;
    out
}

/// The request-level checks: the responses with every refused partition filled in, and the
/// partitions to append.
fn prepare(
    b: &Broker,
    r: ProduceRequest,
    version: i16,
    client_id: Option<&str>,
) -> (i16, Vec<TopicProduceResponse>, Vec<Job>) {
    let acks = r.acks;
    let internal_topics_allowed = client_id == Some(ADMIN_CLIENT_ID);
    let transactional_id: Option<Arc<str>> = r.transactional_id.as_ref().map(|t| Arc::from(&*t.0));
    // Kafka's `handleProduceRequest` first frames every partition's first batch
    // (`RequestUtils.hasTransactionalRecords`): a corrupt one fails the whole request, and
    // transactional records without a transactional id fail it too (nothing can verify them
    // against a transaction).
    let whole_request = match has_transactional_records(&r.topic_data) {
        Err(corrupt) => Some(corrupt),
        Ok(true) if transactional_id.is_none() => {
            // Kafka answers with the error's own message, which `ApiError` leaves out.
            Some(failure(ResponseError::TransactionalIdAuthorizationFailed))
        }
        // Then its per-partition loop: before v7, `validateRecords` reads the first batch's
        // codec, and an id it does not know throws an `IllegalArgumentException`, which no
        // partition catches: the whole request fails, every partition UNKNOWN_SERVER_ERROR
        // (`ApiError` gives that error no message).
        Ok(_) if unknown_codec_before_v7(b, &r.topic_data, version) => {
            Some(failure(ResponseError::UnknownServerError))
        }
        Ok(_) => None,
    };
    let topic_data = once_per_partition(r.topic_data);
    let mut responses: Vec<TopicProduceResponse> = Vec::with_capacity(topic_data.len());
    let mut jobs = vec![];
    // Partitions of a data directory offline since start, which Kafka's metadata still has:
    // every check before the append runs for them, then the append fails.
    let mut offline: Vec<(usize, usize, String, Bytes)> = vec![];
    for (ti, td) in topic_data.into_iter().enumerate() {
        let name = td.name.0.to_string();
        let mut tr = TopicProduceResponse::default();
        tr.name = td.name;
        for (pi, pd) in td.partition_data.into_iter().enumerate() {
            let mut resp = PartitionProduceResponse::default();
            resp.index = pd.index;
            resp.base_offset = -1;
            resp.log_append_time_ms = -1;
            resp.log_start_offset = -1;
            let checked = match &whole_request {
                Some(refused) => Err(refused.clone()),
                None => precheck(b, &name, pd.index, pd.records, version),
            };
            match checked {
                Ok((Some(handle), records)) => {
                    let appendable = appendable(&name, acks, internal_topics_allowed);
                    jobs.push(Job {
                        topic: ti,
                        partition: pi,
                        handle,
                        records,
                        transactional_id: transactional_id.clone(),
                        appendable,
                    });
                }
                Ok((None, records)) => offline.push((ti, pi, name.clone(), records)),
                Err(refused) => refuse(&mut resp, refused, version),
            }
            tr.partition_responses.push(resp);
        }
        responses.push(tr);
    }
    // Kafka's `ReplicaManager.handleProduceAppend` reads the producer fields of every batch to
    // append: a v2 batch cut before them throws an `IndexOutOfBoundsException` out of the
    // handler, failing the whole request UNKNOWN_SERVER_ERROR before anything is appended.
    if jobs
        .iter()
        .map(|j| &j.records)
        .chain(offline.iter().map(|o| &o.3))
        .any(|records| producer_fields_cut_short(records))
    {
        jobs.clear();
        offline.clear();
        for resp in responses
            .iter_mut()
            .flat_map(|t| &mut t.partition_responses)
        {
            refuse(resp, failure(ResponseError::UnknownServerError), version);
        }
    }
    // Then the transactional batches to append must all be one producer's (one id and
    // epoch), or the whole request fails.
    let mut producers = jobs
        .iter()
        .map(|j| &j.records)
        .chain(offline.iter().map(|o| &o.3))
        .filter_map(|records| transactional_producer(records));
    if let Some(first) = producers.next()
        && producers.any(|p| p != first)
    {
        jobs.clear();
        offline.clear();
        for resp in responses
            .iter_mut()
            .flat_map(|t| &mut t.partition_responses)
        {
            // Kafka fails the whole request with this `InvalidPidMappingException`, its
            // message in every partition.
            let refused = failure_with(
                ResponseError::InvalidProducerIdMapping,
                "Transactional records contained more than one producer ID",
            );
            refuse(resp, refused, version);
        }
    }
    // Then, after the transaction verification, `ReplicaManager.appendRecords` (acks) and
    // `appendToLocalLog` (internal topics, then the partition's log: here none).
    for (ti, pi, topic, records) in offline {
        let tp = TopicPartition {
            topic,
            partition: responses[ti].partition_responses[pi].index,
        };
        let refused = match verify(b, &tp, &records, transactional_id.as_ref(), version, |_| {
            appendable(&tp.topic, acks, internal_topics_allowed)
        }) {
            Ok(Ok(())) => failure(ResponseError::KafkaStorageError),
            Ok(Err(refused)) | Err(refused) => refused,
        };
        refuse(&mut responses[ti].partition_responses[pi], refused, version);
    }
    (acks, responses, jobs)
}

/// A request's topics and partitions, each once: Kafka keys the partitions to append by
/// topic-partition, so a partition named twice is appended once, with its last entry's records,
/// and answered once (here at its first entry's place; a topic named twice, in its first entry).
fn once_per_partition(topics: Vec<TopicProduceData>) -> Vec<TopicProduceData> {
    if topics.len() == 1 && topics[0].partition_data.len() <= 1 {
        return topics; // the common case: nothing to repeat
    }
    let mut out: Vec<TopicProduceData> = Vec::with_capacity(topics.len());
    let mut topic_at: HashMap<TopicName, usize> = HashMap::new();
    let mut partition_at: HashMap<(usize, i32), usize> = HashMap::new();
    for td in topics {
        let ti = *topic_at.entry(td.name.clone()).or_insert_with(|| {
            let mut t = TopicProduceData::default();
            t.name = td.name.clone();
            out.push(t);
            out.len() - 1
        });
        let partitions = &mut out[ti].partition_data;
        for pd in td.partition_data {
            match partition_at.entry((ti, pd.index)) {
                Entry::Occupied(at) => partitions[*at.get()] = pd,
                Entry::Vacant(at) => {
                    at.insert(partitions.len());
                    partitions.push(pd);
                }
            }
        }
    }
    out
}

/// An `acks = -1` request: appends every partition now, in order, and returns what finishes the
/// response — waiting for the syncs, then moving the high watermarks and waking long polls.
fn durable(
    b: &Broker,
    mut responses: Vec<TopicProduceResponse>,
    jobs: Vec<Job>,
    version: i16,
) -> impl FnOnce() -> ProduceResponse + Send + 'static {
    let appended: Vec<_> = jobs
        .into_iter()
        .filter_map(|job| {
            let epoch = LeaderEpoch(b.leader_epoch(&job.handle));
            let r = verified_append(b, &job, version, |origin| {
                job.handle
                    .append_as_leader_unsynced(job.records.clone(), epoch, origin)
            })
            .and_then(|r| r);
            match r {
                Ok(r) => Some((job, r)),
                Err(refused) => {
                    refuse(
                        &mut responses[job.topic].partition_responses[job.partition],
                        refused,
                        version,
                    );
                    None
                }
            }
        })
        .collect();
    let appends = b.appends.clone();
    let pool = b.durable_waiters.clone();
    let leaders = current_leaders(b, version);
    move || {
        for (job, result) in wait_durable(&pool, appended) {
            if result.is_ok() && advance_hw(&mut job.handle.write()) {
                // Only the fetches waiting on this partition.
                let tp = job.handle.topic_partition();
                appends.notify_partition(&tp.topic, tp.partition);
            }
            let resp = &mut responses[job.topic].partition_responses[job.partition];
            fill(resp, &job.handle, result, version);
        }
        produce_response(responses, leaders)
    }
}

type Appended = (Job, EngineResult<(LogAppendInfo, Option<PendingSync>)>);

/// Waits for the syncs of appended partitions: in place for one; for several, side by side —
/// the caller and idle [`DurableWaiters`] threads take them from one queue — so their syncs
/// overlap and share group-commit rounds. The caller always works the queue itself, so a busy
/// pool only makes it slower, never stuck.
fn wait_durable(
    pool: &DurableWaiters,
    appended: Vec<Appended>,
) -> Vec<(Job, EngineResult<LogAppendInfo>)> {
    let waiting = appended
        .iter()
        .filter(|(_, r)| matches!(r, Ok((_, Some(_)))))
        .count();
    if waiting <= 1 {
        // The common case (one partition): no queue, channel or helper.
        return appended
            .into_iter()
            .map(|(job, r)| {
                let r = r.and_then(|(info, pending)| match pending {
                    Some(p) => job.handle.wait_durable(p).map(|()| info),
                    None => Ok(info),
                });
                (job, r)
            })
            .collect();
    }
    let mut jobs = Vec::with_capacity(appended.len());
    let mut results: Vec<Option<EngineResult<LogAppendInfo>>> = vec![];
    let mut queue = std::collections::VecDeque::new();
    for (i, (job, r)) in appended.into_iter().enumerate() {
        match r {
            Ok((info, Some(p))) => {
                queue.push_back((i, job.handle.clone(), info, p));
                results.push(None);
            }
            Ok((info, None)) => results.push(Some(Ok(info))),
            Err(e) => results.push(Some(Err(e))),
        }
        jobs.push(job);
    }
    let queue = Arc::new(Mutex::new(queue));
    let (tx, rx) = crossbeam_channel::unbounded();
    let helpers = waiting
        .saturating_sub(1)
        .min(MAX_PARALLEL_DURABLE_APPENDS - 1);
    for _ in 0..helpers {
        let (queue, tx) = (queue.clone(), tx.clone());
        pool.submit(Box::new(move || drain_durable(&queue, &tx)));
    }
    drain_durable(&queue, &tx);
    drop(tx);
    let mut left = results.iter().filter(|r| r.is_none()).count();
    let mut panicked = None;
    while left > 0 {
        // Every queued wait was taken by the caller or by a helper, which sends its answer
        // (or its panic) after it has let go of the partition's handle and before it lets go of
        // its sender. So once every answer is in, no helper holds a handle of this request (a
        // shutdown right after the answer finds every partition free), even after a panic.
        let (i, r) = rx.recv().expect("a taken wait always answers");
        match r {
            Ok(r) => results[i] = Some(r),
            Err(panic) => {
                panicked.get_or_insert(panic);
            }
        }
        left -= 1;
    }
    if let Some(panic) = panicked {
        std::panic::resume_unwind(panic);
    }
    jobs.into_iter()
        .zip(results)
        .map(|(job, r)| (job, r.expect("every wait answered")))
        .collect()
}

type DurableQueue =
    Mutex<std::collections::VecDeque<(usize, Arc<PartitionHandle>, LogAppendInfo, PendingSync)>>;
type DurableAnswer = (usize, std::thread::Result<EngineResult<LogAppendInfo>>);

/// Takes waits off `queue` until it is empty, answering each on `tx` (a panic is answered too,
/// and raised again in the request's thread).
fn drain_durable(queue: &DurableQueue, tx: &crossbeam_channel::Sender<DurableAnswer>) {
    loop {
        let Some((i, handle, info, pending)) = queue.lock().pop_front() else {
            return;
        };
        // The closure owns the handle, so it is dropped (on return or unwind) before the answer.
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
            handle.wait_durable(pending).map(|()| info)
        }));
        // The receiver is gone only if the request's thread panicked: nobody to answer.
        let _ = tx.send((i, r));
    }
}

/// Long-lived threads that help wait for the syncs of multi-partition `acks = -1` requests
/// (starting a thread per partition cost tens of microseconds each, more under load). Started
/// on demand — one more whenever work is submitted and none is idle — up to
/// `MAX_PARALLEL_DURABLE_APPENDS - 1`; they end when the broker (and with it the pool) drops.
#[derive(Default)]
pub struct DurableWaiters {
    inner: Mutex<Option<PoolInner>>,
}

struct PoolInner {
    tx: crossbeam_channel::Sender<Box<dyn FnOnce() + Send>>,
    rx: crossbeam_channel::Receiver<Box<dyn FnOnce() + Send>>,
    threads: usize,
    idle: Arc<std::sync::atomic::AtomicUsize>,
}

impl std::fmt::Debug for DurableWaiters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DurableWaiters")
            .field("threads", &self.threads())
            .finish()
    }
}

impl DurableWaiters {
    /// Threads started so far.
    pub fn threads(&self) -> usize {
        self.inner.lock().as_ref().map_or(0, |p| p.threads)
    }

    /// Runs `task` on a pool thread (started if none is idle and the pool is not full).
    fn submit(&self, task: Box<dyn FnOnce() + Send>) {
        use std::sync::atomic::Ordering;
        let mut guard = self.inner.lock();
        let pool = guard.get_or_insert_with(|| {
            let (tx, rx) = crossbeam_channel::unbounded();
            PoolInner {
                tx,
                rx,
                threads: 0,
                idle: Arc::default(),
            }
        });
        if pool.idle.load(Ordering::Acquire) == 0 && pool.threads < MAX_PARALLEL_DURABLE_APPENDS - 1
        {
            let (rx, idle) = (pool.rx.clone(), pool.idle.clone());
            let spawned = std::thread::Builder::new()
                .name("durable-wait".into())
                .spawn(move || {
                    loop {
                        idle.fetch_add(1, Ordering::AcqRel);
                        let task = rx.recv();
                        idle.fetch_sub(1, Ordering::AcqRel);
                        match task {
                            Ok(task) => task(),
                            Err(_) => return,
                        }
                    }
                });
            match spawned {
                Ok(_) => pool.threads += 1,
                // The caller works the queue itself; a missing helper only costs overlap.
                Err(e) => tracing::warn!(error = %e, "could not start a durable-wait thread"),
            }
        }
        // The pool holds a receiver, so the send cannot fail while the pool exists.
        let _ = pool.tx.send(task);
    }
}

/// A partition refused before or by its append: the error code and the `error_message` (Produce
/// v8+) Kafka answers with it.
type Refusal = (i16, Option<String>);

/// A refusal without a message: Kafka answers most per-partition Produce errors without one —
/// its `LogAppendResult.errorMessage` is set only for a `RecordValidationException` and for
/// the translated transaction-verification errors (`hasCustomErrorMessage`), and a whole-request
/// error's message is left out by `ApiError` when it is the error's default.
fn failure(e: ResponseError) -> Refusal {
    (e.code(), None)
}

/// A refusal Kafka answers with `message`.
fn failure_with(e: ResponseError, message: impl Into<String>) -> Refusal {
    (e.code(), Some(message.into()))
}

/// The checks of Kafka's `handleProduceRequest` before a partition reaches the replica manager,
/// in its order: existence, `ProduceRequest.validateRecords` (one v2 batch; ZStandard only from
/// v7). The records returned are that batch's, a partial batch after it dropped; the handle is
/// `None` for a partition of a data directory offline since start (Kafka's metadata has it, and
/// only its log append fails).
fn precheck(
    b: &Broker,
    topic: &str,
    partition: i32,
    records: Option<Bytes>,
    version: i16,
) -> Result<(Option<Arc<PartitionHandle>>, Bytes), Refusal> {
    let handle = in_metadata(b, topic, partition)?;
    let Some(mut records) = records else {
        return Err(no_batch());
    };
    let size = validate_records(version, &records)?;
    records.truncate(size);
    Ok((handle, records))
}

/// Whether Kafka's metadata has the partition (`metadataCache.contains`): its handle, `None` for
/// a partition of a data directory offline since start; `UNKNOWN_TOPIC_OR_PARTITION` if not.
fn in_metadata(
    b: &Broker,
    topic: &str,
    partition: i32,
) -> Result<Option<Arc<PartitionHandle>>, Refusal> {
    let unknown = || failure(ResponseError::UnknownTopicOrPartition);
    if b.topics.get(topic).is_none() {
        return Err(unknown());
    }
    let handle = b.partition(topic, partition);
    if handle.is_none()
        && b.missing_partition_error(topic, partition) != ResponseError::KafkaStorageError
    {
        return Err(unknown());
    }
    Ok(handle)
}

/// Whether a request of Produce `version` below v7 names, for a partition Kafka's metadata
/// has, a first batch `validateRecords` reads the codec of (one whole v2 batch) whose codec id
/// Kafka does not know: Kafka's loop over the request's entries (a partition named twice in
/// each of its entries) then throws out of the handler ([`validate_records`]).
fn unknown_codec_before_v7(b: &Broker, topics: &[TopicProduceData], version: i16) -> bool {
    version < ZSTD_SINCE
        && topics.iter().any(|t| {
            t.partition_data.iter().any(|p| {
                p.records.as_deref().is_some_and(|records| {
                    matches!(validate_records(version, records), Err((code, _))
                        if code == ResponseError::UnknownServerError.code())
                        && in_metadata(b, &t.name.0, p.index).is_ok()
                })
            })
        })
}

/// Whether Kafka's `handleProduceAppend` reads past the end of `records` (one v2 batch): its
/// `batch.hasProducerId` reads the producer id, and for a transactional batch with one also the
/// epoch and the base sequence. A batch cut before what it reads (shorter than the v2 header,
/// which its iterator frames from a length of 14) throws `IndexOutOfBoundsException` there.
fn producer_fields_cut_short(records: &[u8]) -> bool {
    let Some(pid) = records.get(PRODUCER_ID_AT..PRODUCER_ID_AT + 8) else {
        return true;
    };
    let pid = i64::from_be_bytes(pid.try_into().expect("8 bytes"));
    pid >= 0 && is_transactional(records) && records.len() < BASE_SEQUENCE_AT + 4
}

/// The replica manager's checks before an append, in its order: `acks`
/// (`ReplicaManager.appendRecords`), then no internal topic unless the request's client id is
/// [`ADMIN_CLIENT_ID`] (`appendToLocalLog`).
fn appendable(topic: &str, acks: i16, internal_topics_allowed: bool) -> Result<(), Refusal> {
    if !matches!(acks, -1..=1) {
        return Err(failure(ResponseError::InvalidRequiredAcks));
    }
    if INTERNAL_TOPICS.contains(&topic) && !internal_topics_allowed {
        return Err(failure(ResponseError::InvalidTopicException));
    }
    Ok(())
}

/// Not one whole batch ("Produce requests with version … must have at least one record batch").
fn no_batch() -> Refusal {
    failure(ResponseError::InvalidRecord)
}

/// Kafka's `ProduceRequest.validateRecords`, over the batches as Kafka's iterator frames them
/// ([`next_batch_size`]): at least one whole batch, of magic 2, no ZStandard before v7 (nor a
/// codec id Kafka does not know: `UNKNOWN_SERVER_ERROR`, which fails the whole request), and no
/// second whole batch. Returns the size of that batch: a partial batch after it is not one to
/// Kafka's iterator, and its log appends only the whole batches (`trimInvalidBytes`), so the
/// caller drops it. The rest (CRC, header fields) is the engine's. Kafka answers these
/// partitions without an `error_message` (`new PartitionResponse(Errors.forException(e))`).
fn validate_records(version: i16, records: &[u8]) -> Result<usize, Refusal> {
    let corrupt = |_| failure(ResponseError::CorruptMessage);
    let Some(size) = next_batch_size(records).map_err(corrupt)? else {
        return Err(no_batch());
    };
    if records[MAGIC_AT] != 2 {
        return Err(failure(ResponseError::InvalidRecord));
    }
    if version < ZSTD_SINCE
        && let Some(a) = records.get(ATTRIBUTES_AT..ATTRIBUTES_AT + 2)
    {
        match i16::from_be_bytes([a[0], a[1]]) & 0x07 {
            ZSTD_CODEC => return Err(failure(ResponseError::UnsupportedCompressionType)),
            // `CompressionType.forId` throws an `IllegalArgumentException`, which fails the
            // whole request ([`unknown_codec_before_v7`]).
            codec if codec > ZSTD_CODEC => {
                return Err(failure(ResponseError::UnknownServerError));
            }
            _ => {}
        }
    }
    if next_batch_size(&records[size..])
        .map_err(corrupt)?
        .is_some()
    {
        // "… are only allowed to contain exactly one record batch per partition"
        return Err(failure(ResponseError::InvalidRecord));
    }
    Ok(size)
}

/// The size of the batch `bytes` start with, framed as Kafka's `ByteBufferLogInputStream`
/// frames it: `None` where its iterator ends — fewer bytes than the length field's end, or than
/// the magic's, or than the length declares — and the message of its `CorruptRecordException`
/// (`CORRUPT_MESSAGE`) for a length below Kafka's smallest record (`RECORD_OVERHEAD_V0`) or a
/// magic it does not know.
fn next_batch_size(bytes: &[u8]) -> Result<Option<usize>, String> {
    let Some(length) = bytes.get(LENGTH_AT..LOG_OVERHEAD) else {
        return Ok(None);
    };
    let length = i32::from_be_bytes(length.try_into().expect("4 bytes"));
    if length < MIN_BATCH_LENGTH {
        return Err(format!(
            "Record size {length} is less than the minimum record overhead ({MIN_BATCH_LENGTH})"
        ));
    }
    let Some(&magic) = bytes.get(MAGIC_AT) else {
        return Ok(None);
    };
    if magic > 2 {
        return Err(format!("Invalid magic found in record: {}", magic as i8));
    }
    let size = LOG_OVERHEAD + length as usize;
    Ok((bytes.len() >= size).then_some(size))
}

/// Kafka's `RequestUtils.hasTransactionalRecords`, which `handleProduceRequest` runs before
/// anything else: whether the request has transactional records — the first whole batch of any
/// partition (named twice or of an unknown topic too) flagged transactional, whatever its
/// producer id, a client's control batch too, which the log refuses only afterwards; a partial
/// or legacy (magic 0, 1) first batch is not. Kafka 4's scan (`RequestUtils.flag`) frames each
/// partition's first batch in request order and stops at the first transactional one; a first
/// batch it finds corrupt before that fails the whole request: `Err` with that
/// `CORRUPT_MESSAGE` and its message (`ProduceRequest.getErrorResponse`). It reads no producer
/// id, so a batch cut short of one passes here (see [`producer_fields_cut_short`]).
fn has_transactional_records(topics: &[TopicProduceData]) -> Result<bool, Refusal> {
    for records in topics
        .iter()
        .flat_map(|t| &t.partition_data)
        .filter_map(|p| p.records.as_deref())
    {
        let framed = next_batch_size(records)
            .map_err(|message| failure_with(ResponseError::CorruptMessage, message))?;
        if framed.is_some() && records[MAGIC_AT] >= 2 && is_transactional(records) {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Whether `records` start with a batch whose attributes have the transactional flag (read
/// where a v2 batch keeps them).
fn is_transactional(records: &[u8]) -> bool {
    records
        .get(ATTRIBUTES_AT..ATTRIBUTES_AT + 2)
        .is_some_and(|a| i16::from_be_bytes([a[0], a[1]]) & TRANSACTIONAL_BIT != 0)
}

/// The producer id and epoch of a transactional batch with a producer id: the batches
/// Kafka's `handleProduceAppend` verifies and counts (`batch.hasProducerId &&
/// batch.isTransactional`). A transactional batch without one (−1) is appended unverified, as
/// Kafka's log has no producer state to check it against. `None` for any other, or for bytes
/// too short to tell (the engine refuses those).
fn transactional_producer(records: &[u8]) -> Option<(i64, i16)> {
    if !is_transactional(records) {
        return None;
    }
    let pid = records.get(PRODUCER_ID_AT..PRODUCER_ID_AT + 8)?;
    let epoch = records.get(PRODUCER_EPOCH_AT..PRODUCER_EPOCH_AT + 2)?;
    let pid = i64::from_be_bytes(pid.try_into().ok()?);
    (pid >= 0).then(|| (pid, i16::from_be_bytes([epoch[0], epoch[1]])))
}

/// Runs `append` with the origin transaction verification (KIP-890 part 1) asks for — see the
/// module docs: a transactional batch of a request with a transactional id only inside its
/// verified transaction, one without only as [`LeaderOrigin::ClientUnverified`]. A broker with
/// no transaction coordinator appends unverified, as Kafka did before 3.6. After a verification
/// that passed, the job's [`appendable`] refusal (acks, internal topic) is answered instead of
/// the append, as Kafka's `appendRecords` runs after `handleProduceAppend` verified.
fn verified_append<R>(
    b: &Broker,
    job: &Job,
    version: i16,
    append: impl FnOnce(LeaderOrigin) -> R,
) -> Result<Result<R, Refusal>, Refusal> {
    let tp = job.handle.topic_partition();
    verify(
        b,
        tp,
        &job.records,
        job.transactional_id.as_ref(),
        version,
        |origin| job.appendable.clone().map(|()| append(origin)),
    )
}

/// [`verified_append`]'s verification of `records` to `tp`, around any `append`.
fn verify<R>(
    b: &Broker,
    tp: &TopicPartition,
    records: &[u8],
    transactional_id: Option<&Arc<str>>,
    version: i16,
    append: impl FnOnce(LeaderOrigin) -> R,
) -> Result<R, Refusal> {
    let (Some((producer_id, producer_epoch)), Some(verifier)) =
        (transactional_producer(records), b.txn_verifier())
    else {
        return Ok(append(LeaderOrigin::Client));
    };
    let Some(transactional_id) = transactional_id else {
        // Refused in `prepare` (no job gets here); the engine's own check as a second line.
        return Ok(append(LeaderOrigin::ClientUnverified));
    };
    crate::txn::verified(
        &**verifier,
        transactional_id,
        producer_id,
        producer_epoch,
        tp,
        || append(LeaderOrigin::Client),
    )
    .map_err(|e| verification_failure(e, version))
}

/// The first Produce version that knows TRANSACTION_ABORTABLE (KIP-890; Kafka's
/// `produceRequestVersionToTransactionSupportedOperation`: `GENERIC_ERROR_SUPPORTED`).
const TRANSACTION_ABORTABLE_SINCE: i16 = 11;

/// A failed verification as Kafka's `ReplicaManager` answers it to a producer of Produce
/// `version`.
fn verification_failure(e: TxnError, version: i16) -> Refusal {
    let unverified = |underlying: ResponseError| {
        failure_with(
            ResponseError::NotEnoughReplicas,
            format!(
                "Unable to verify the partition has been added to the transaction. \
                 Underlying error: {}",
                crate::errors::error_name(underlying.code())
            ),
        )
    };
    match e {
        // The coordinator's TRANSACTION_ABORTABLE goes to a v11+ producer as it is, without a
        // message; an older one gets INVALID_TXN_STATE, which `ReplicaManager` gives its message.
        TxnError::PartitionNotInTransaction if version >= TRANSACTION_ABORTABLE_SINCE => {
            failure(ResponseError::TransactionAbortable)
        }
        TxnError::PartitionNotInTransaction => failure_with(
            ResponseError::InvalidTxnState,
            "Partition was not added to the transaction",
        ),
        TxnError::ProducerFenced => failure(ResponseError::InvalidProducerEpoch),
        TxnError::InvalidProducerIdMapping => failure(ResponseError::InvalidProducerIdMapping),
        TxnError::InvalidRequest(_) => failure(ResponseError::InvalidRequest),
        TxnError::ConcurrentTransactions => unverified(ResponseError::ConcurrentTransactions),
        // The transactional id's state partition is not loaded (offline data dir).
        TxnError::NotLoaded(_) => unverified(ResponseError::NotCoordinator),
        _ => failure(ResponseError::UnknownServerError),
    }
}

/// Fills a partition's response refused before reaching the log.
fn refuse(resp: &mut PartitionProduceResponse, (code, message): Refusal, version: i16) {
    resp.error_code = code;
    resp.base_offset = -1;
    resp.log_append_time_ms = -1;
    resp.log_start_offset = -1;
    if version >= 8 {
        resp.error_message = message.map(|m| sb(&m));
    }
}

/// One append as leader (`acks` 0/1) with the partition's current leader epoch; then HW = LEO
/// and a wake-up for long polls.
fn append(
    b: &Broker,
    h: &PartitionHandle,
    records: Bytes,
    origin: LeaderOrigin,
) -> EngineResult<LogAppendInfo> {
    let mut log = h.write();
    // The partition's leader epoch (as `acks = -1` and Metadata have it): a mirror's epoch bump
    // may have raised it above the epoch cache's latest.
    let epoch = LeaderEpoch(log.leader_epoch().get().max(0));
    let r = log.append_as_leader(records, epoch, origin);
    let moved = r.is_ok() && advance_hw(&mut log);
    drop(log);
    if moved {
        let tp = h.topic_partition();
        b.appends.notify_partition(&tp.topic, tp.partition);
    }
    r
}

/// Single node: the high watermark follows the log end. Returns whether it moved.
fn advance_hw(log: &mut mirrorlog_engine::log::PartitionLog) -> bool {
    let leo = log.log_end_offset();
    log.maybe_increment_high_watermark(leo)
}

/// Fills a partition's response from its append.
fn fill(
    resp: &mut PartitionProduceResponse,
    h: &PartitionHandle,
    result: EngineResult<LogAppendInfo>,
    version: i16,
) {
    match result {
        Ok(info) => {
            resp.error_code = 0;
            resp.base_offset = info.first_offset.get();
            resp.log_append_time_ms = info.log_append_time.map_or(-1, |t| t.get());
            resp.log_start_offset = info.log_start_offset.get();
        }
        Err(e) => {
            resp.error_code = engine_error_code(&e);
            resp.base_offset = -1;
            resp.log_append_time_ms = -1;
            // Kafka's `appendToLocalLog` answers the failures it knows as
            // `UNKNOWN_LOG_APPEND_INFO` (log start −1), every other one with the partition's log
            // start: told apart by the Kafka error, as a storage failure reaches here as a
            // segment's, an index's or an offline directory's error.
            let unknown_append = [
                ResponseError::UnknownTopicOrPartition,
                ResponseError::NotLeaderOrFollower,
                ResponseError::MessageTooLarge,
                ResponseError::RecordListTooLarge,
                ResponseError::CorruptMessage,
                ResponseError::KafkaStorageError,
            ]
            .iter()
            .any(|k| k.code() == resp.error_code);
            resp.log_start_offset = match unknown_append {
                true => -1,
                false => h.read().log_start_offset().get(),
            };
            if version >= 8
                && let Some(errors) = timestamp_record_errors(&e)
            {
                // Kafka's `LogValidator.processRecordErrors`: a `RecordValidationException`,
                // the one engine error Kafka answers with an `error_message`, and one record
                // error per record refused.
                resp.error_message = Some(sb(
                    "One or more records have been rejected due to invalid timestamp",
                ));
                resp.record_errors = errors
                    .map(|(index, message)| {
                        let mut re = BatchIndexAndErrorMessage::default();
                        re.batch_index = index;
                        re.batch_index_error_message = Some(sb(&message));
                        re
                    })
                    .collect();
            }
        }
    }
}

/// The record errors of a client batch refused for its records' timestamps, each
/// `(batch_index, message)` in Kafka's `LogValidator.validateTimestamp` words (a client
/// batch's base offset is 0, so a record's offset is its delta); `None` for other errors.
fn timestamp_record_errors(
    e: &EngineError,
) -> Option<Box<dyn Iterator<Item = (i32, String)> + '_>> {
    match e {
        EngineError::InvalidTimestamp {
            invalid,
            valid_range: (from, to),
            ..
        } => Some(Box::new(invalid.iter().map(move |r| {
            (
                r.index as i32,
                format!(
                    "Timestamp {} of message with offset {} is out of range. The timestamp \
                     should be within [{from}, {to}]",
                    r.timestamp, r.offset_delta
                ),
            )
        }))),
        EngineError::LogAppendTimeSet {
            timestamp,
            records,
            partial,
        } => Some(Box::new(records.iter().enumerate().map(move |(i, r)| {
            // Kafka's `Record.toString` of the iterator it walked: the skipping one counts a
            // null key or value as −1 bytes, the full one as 0.
            let (kind, key, value) = match partial {
                true => ("PartialDefaultRecord", r.key_bytes, r.value_bytes),
                false => ("DefaultRecord", r.key_bytes.max(0), r.value_bytes.max(0)),
            };
            (
                i as i32,
                format!(
                    "Invalid timestamp type in message {kind}(offset={}, timestamp={timestamp}, \
                     key={key} bytes, value={value} bytes). Producer should not set timestamp \
                     type to LogAppendTime.",
                    r.offset_delta
                ),
            )
        }))),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 61-byte batch (length field 49) of `magic` and `codec`, zero elsewhere.
    fn header(magic: u8, codec: u8) -> Vec<u8> {
        let mut batch = vec![0u8; 61];
        batch[LENGTH_AT + 3] = 49;
        batch[MAGIC_AT] = magic;
        batch[ATTRIBUTES_AT + 1] = codec;
        batch
    }

    #[test]
    fn producer_fields_are_cut_short_where_kafka_reads_past_the_end() {
        let plain = header(2, 0);
        assert!(producer_fields_cut_short(&plain[..50]));
        assert!(!producer_fields_cut_short(&plain[..51]));
        // A transactional batch with a producer id: its epoch and base sequence are read too.
        let mut txn = header(2, 0);
        txn[ATTRIBUTES_AT + 1] |= TRANSACTIONAL_BIT as u8;
        assert!(producer_fields_cut_short(&txn[..56]));
        assert!(!producer_fields_cut_short(&txn[..57]));
        txn[PRODUCER_ID_AT..PRODUCER_ID_AT + 8].copy_from_slice(&(-1i64).to_be_bytes());
        assert!(!producer_fields_cut_short(&txn[..51]));
    }

    #[test]
    fn records_are_checked_as_kafkas_validate_records() {
        let invalid = ResponseError::InvalidRecord.code();
        let corrupt = ResponseError::CorruptMessage.code();
        assert_eq!(validate_records(9, &[]).unwrap_err().0, invalid);
        assert_eq!(validate_records(9, &header(1, 0)).unwrap_err().0, invalid);
        assert_eq!(validate_records(9, &header(2, 0)), Ok(61));
        // ZStandard only from v7.
        let zstd = header(2, ZSTD_CODEC as u8);
        assert_eq!(
            validate_records(6, &zstd).unwrap_err().0,
            ResponseError::UnsupportedCompressionType.code()
        );
        assert!(validate_records(7, &zstd).is_ok());
        // A codec id Kafka does not know: read (and thrown on) only before v7.
        for codec in 5..=7 {
            let unknown = header(2, codec);
            assert_eq!(
                validate_records(6, &unknown).unwrap_err().0,
                ResponseError::UnknownServerError.code()
            );
            assert_eq!(validate_records(7, &unknown), Ok(61));
        }
        // No whole batch.
        assert_eq!(validate_records(3, &[0u8; 5]).unwrap_err().0, invalid);
        assert_eq!(
            validate_records(3, &header(2, 0)[..60]).unwrap_err().0,
            invalid
        );
        // A length below 14, a magic above 2: corrupt, whole or not.
        let mut short = header(2, 0);
        short[LENGTH_AT + 3] = 13;
        assert_eq!(validate_records(3, &short[..12]).unwrap_err().0, corrupt);
        let mut unknown = header(7, 0);
        assert_eq!(validate_records(3, &unknown[..17]).unwrap_err().0, corrupt);
        unknown[MAGIC_AT] = 0xff;
        assert_eq!(validate_records(3, &unknown).unwrap_err().0, corrupt);
        // After a whole batch: a second one is refused, a partial one is dropped.
        let two = [header(2, 0), header(2, 0)].concat();
        assert_eq!(validate_records(9, &two).unwrap_err().0, invalid);
        for cut in [1, 11, 12, 16, 17, 60] {
            assert_eq!(
                validate_records(9, &two[..61 + cut]),
                Ok(61),
                "tail of {cut}"
            );
        }
        assert_eq!(
            validate_records(9, &[&header(2, 0)[..], &short[..12]].concat())
                .unwrap_err()
                .0,
            corrupt
        );
    }
}
