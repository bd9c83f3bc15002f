//! ListOffsets, OffsetForLeaderEpoch, DeleteRecords and DescribeProducers: offset lookups,
//! log-start moves and producer state of the partitions this node leads (all of them).
//!
//! Leader-epoch fencing follows Kafka's `Partition.localLogWithEpochOrThrow`: a request's
//! `current_leader_epoch` of -1 is not checked; above this node's epoch it is
//! UNKNOWN_LEADER_EPOCH (the client knows a newer leader than we do), below it
//! FENCED_LEADER_EPOCH (the client's metadata is stale). This node's epoch of a partition is its
//! epoch cache's latest ([`Broker::leader_epoch`]).

use crate::broker::Broker;
use crate::errors::{READ_ONLY_TOPIC, engine_error_code};
use crate::topics::{INTERNAL_TOPICS, validate_topic_name};
use kafka_protocol::ResponseError;
use kafka_protocol::messages::delete_records_response::{
    DeleteRecordsPartitionResult, DeleteRecordsTopicResult,
};
use kafka_protocol::messages::describe_producers_response::{
    PartitionResponse, ProducerState, TopicResponse,
};
use kafka_protocol::messages::list_offsets_response::{
    ListOffsetsPartitionResponse, ListOffsetsTopicResponse,
};
use kafka_protocol::messages::offset_for_leader_epoch_response::{
    EpochEndOffset, OffsetForLeaderTopicResult,
};
use kafka_protocol::messages::{
    DeleteRecordsRequest, DeleteRecordsResponse, DescribeProducersRequest,
    DescribeProducersResponse, ListOffsetsRequest, ListOffsetsResponse,
    OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse, ProducerId, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use mirrorlog_engine::log::{FetchIsolation, OffsetLookup, PartitionLog};
use mirrorlog_index::{ErrorChain, LeaderEpoch, Offset, TimestampMs};
use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet};

/// ListOffsets timestamp: the log end bound of the isolation level.
pub const LATEST_TIMESTAMP: i64 = -1;
/// ListOffsets timestamp: the log start offset.
pub const EARLIEST_TIMESTAMP: i64 = -2;
/// ListOffsets timestamp (v7+): the record with the largest timestamp.
pub const MAX_TIMESTAMP: i64 = -3;
/// ListOffsets timestamp (v8+): the first offset held locally, which is the log start here (no
/// tiered storage).
pub const EARLIEST_LOCAL_TIMESTAMP: i64 = -4;

/// DeleteRecords offset meaning "up to the high watermark".
pub const DELETE_TO_HIGH_WATERMARK: i64 = -1;

/// The replica id of an ordinary consumer in ListOffsets.
const CONSUMER_REPLICA_ID: i32 = -1;

/// This node's epoch of the partition, from a guard already held (as [`Broker::leader_epoch`]).
fn current_epoch(log: &PartitionLog) -> i32 {
    log.leader_epoch().get().max(0)
}

/// `end_offset_for` as a Kafka leader answers it. Kafka's leader always holds its current epoch
/// in its cache (`Partition.makeLeader` assigns `(epoch, LEO)`); here the current epoch (0 on a
/// fresh partition, or a floor a mirror raised) may be missing from the cache, so it is answered
/// as if it began at the log end: the current epoch ends at the log end, and an epoch between the
/// latest cached one and the current one ends there too.
fn leader_end_offset_for(log: &PartitionLog, requested: LeaderEpoch) -> (LeaderEpoch, Offset) {
    let leo = log.log_end_offset();
    let cache = log.epoch_cache();
    let answer = cache.end_offset_for(requested, leo);
    let current = LeaderEpoch(current_epoch(log));
    if answer.1 != Offset::UNKNOWN || requested == LeaderEpoch::NONE || requested > current {
        return answer;
    }
    // Undefined with `requested <= current`: every cached epoch is below `requested`.
    if requested == current {
        (current, leo)
    } else {
        (cache.latest_epoch().unwrap_or(requested), leo)
    }
}

/// Kafka's leader-epoch fencing of a request's `current_leader_epoch`.
fn check_epoch(requested: i32, ours: i32) -> Result<(), i16> {
    if requested == -1 || requested == ours {
        Ok(())
    } else if requested > ours {
        Err(ResponseError::UnknownLeaderEpoch.code())
    } else {
        Err(ResponseError::FencedLeaderEpoch.code())
    }
}

/// ListOffsets v1–8: per partition the offset for a timestamp: -2 the log start, -1 the bound of
/// the isolation level (consumers: high watermark, or last stable offset for READ_COMMITTED
/// (v2+); replicas: log end), -3 the record with the largest timestamp, -4 the log start, and
/// ≥ 0 the first record at or after that time. A time lookup that finds nothing, or only records
/// a consumer may not yet read, answers offset -1 and timestamp -1. v4+ answers the leader epoch
/// of the offset and fences on `current_leader_epoch`. A partition named twice is
/// INVALID_REQUEST. An isolation level other than 0 or 1 (from any replica id) fails the whole
/// request with UNKNOWN_SERVER_ERROR in every partition, as Kafka's `IsolationLevel.forId`
/// throws in `handleListOffsetRequest` and `ListOffsetsRequest.getErrorResponse` answers it.
pub fn list_offsets(b: &Broker, r: ListOffsetsRequest, v: i16) -> ListOffsetsResponse {
    let consumer = r.replica_id.0 == CONSUMER_REPLICA_ID;
    let isolation = match r.isolation_level {
        0 | 1 if !consumer => FetchIsolation::LogEnd,
        0 => FetchIsolation::HighWatermark,
        1 => FetchIsolation::TxnCommitted,
        // An empty request fails no partition, as Kafka's never reads the level.
        _ => return list_offsets_failed(&r, ResponseError::UnknownServerError.code()),
    };
    // Kafka answers every copy of a partition named twice with INVALID_REQUEST.
    let mut named: HashMap<(&str, i32), usize> = HashMap::new();
    for t in &r.topics {
        for p in &t.partitions {
            *named
                .entry((t.name.0.as_str(), p.partition_index))
                .or_default() += 1;
        }
    }
    let duplicates: HashSet<(String, i32)> = named
        .into_iter()
        .filter(|(_, n)| *n > 1)
        .map(|((t, p), _)| (t.to_string(), p))
        .collect();
    let mut resp = ListOffsetsResponse::default();
    for t in r.topics {
        let topic = t.name.0.as_str().to_string();
        let mut out = ListOffsetsTopicResponse::default();
        out.name = t.name.clone();
        for p in t.partitions {
            let mut part = ListOffsetsPartitionResponse::default();
            part.partition_index = p.partition_index;
            // Defaults: offset -1, timestamp -1, leader epoch -1.
            let found = if duplicates.contains(&(topic.clone(), p.partition_index)) {
                Err(ResponseError::InvalidRequest.code())
            } else {
                list_one(
                    b,
                    &topic,
                    p.partition_index,
                    p.timestamp,
                    p.current_leader_epoch,
                    isolation,
                )
            };
            match found {
                Ok(found) => {
                    part.error_code = 0;
                    if let Some((offset, timestamp, epoch)) = found {
                        part.offset = offset;
                        part.timestamp = timestamp;
                        if v >= 4 {
                            part.leader_epoch = epoch;
                        }
                    }
                }
                Err(code) => part.error_code = code,
            }
            out.partitions.push(part);
        }
        resp.topics.push(out);
    }
    resp
}

/// Every partition of the request, in its order (duplicates too), with `code`, offset -1 and
/// timestamp -1 (Kafka's `ListOffsetsRequest.getErrorResponse`).
fn list_offsets_failed(r: &ListOffsetsRequest, code: i16) -> ListOffsetsResponse {
    let mut resp = ListOffsetsResponse::default();
    for t in &r.topics {
        let mut out = ListOffsetsTopicResponse::default();
        out.name = t.name.clone();
        for p in &t.partitions {
            let mut part = ListOffsetsPartitionResponse::default();
            part.partition_index = p.partition_index;
            part.error_code = code;
            out.partitions.push(part);
        }
        resp.topics.push(out);
    }
    resp
}

/// One partition's lookup: `Ok(None)` when no offset matches.
fn list_one(
    b: &Broker,
    topic: &str,
    partition: i32,
    timestamp: i64,
    current_leader_epoch: i32,
    isolation: FetchIsolation,
) -> Result<Option<(i64, i64, i32)>, i16> {
    let h = b
        .partition(topic, partition)
        .ok_or_else(|| b.missing_partition_error(topic, partition).code())?;
    // An offline log dir serves nothing (Kafka: KAFKA_STORAGE_ERROR), as Fetch.
    h.check_online()
        .map_err(|_| ResponseError::KafkaStorageError.code())?;
    let log = h.read();
    check_epoch(current_leader_epoch, current_epoch(&log))?;
    let lookup = match timestamp {
        LATEST_TIMESTAMP => OffsetLookup::Latest(isolation),
        EARLIEST_TIMESTAMP | EARLIEST_LOCAL_TIMESTAMP => OffsetLookup::Earliest,
        MAX_TIMESTAMP => OffsetLookup::MaxTimestamp,
        ts if ts >= 0 => OffsetLookup::Timestamp(TimestampMs(ts)),
        _ => return Err(ResponseError::InvalidRequest.code()),
    };
    let found = log
        .fetch_offset(lookup)
        .map_err(|e| engine_error_code(&e))?;
    let Some((offset, ts, epoch)) = found else {
        return Ok(None);
    };
    // A time lookup only answers records the asker may read (Kafka's `lastFetchableOffset`).
    if matches!(
        lookup,
        OffsetLookup::MaxTimestamp | OffsetLookup::Timestamp(_)
    ) {
        let bound = match isolation {
            FetchIsolation::LogEnd => log.log_end_offset(),
            FetchIsolation::HighWatermark => log.high_watermark(),
            FetchIsolation::TxnCommitted => log.last_stable_offset(),
        };
        if offset >= bound {
            return Ok(None);
        }
    }
    // The latest offset carries the partition's current leader epoch, as Kafka answers it (0 on
    // a fresh partition, where the epoch cache is still empty).
    let epoch = match lookup {
        OffsetLookup::Latest(_) => current_epoch(&log),
        _ => epoch.map_or(-1, |e| e.get()),
    };
    Ok(Some((offset.get(), ts.get(), epoch)))
}

/// OffsetForLeaderEpoch v0–4 (the codec decodes v2–4): per partition, the largest epoch ≤ the
/// requested one this log knows and the offset where it ends (the log end for the latest epoch),
/// or (-1, -1) when undefined; fences on `current_leader_epoch` (v2+). `replica_id` (v3+) is not
/// needed: consumers and replicas get the same answer.
pub fn offset_for_leader_epoch(
    b: &Broker,
    r: OffsetForLeaderEpochRequest,
    _v: i16,
) -> OffsetForLeaderEpochResponse {
    let mut resp = OffsetForLeaderEpochResponse::default();
    for t in r.topics {
        let topic = t.topic.0.as_str().to_string();
        let mut out = OffsetForLeaderTopicResult::default();
        out.topic = t.topic.clone();
        for p in t.partitions {
            let mut part = EpochEndOffset::default();
            part.partition = p.partition;
            // Defaults: leader epoch -1, end offset -1.
            let answer = (|| {
                let h = b
                    .partition(&topic, p.partition)
                    .ok_or_else(|| b.missing_partition_error(&topic, p.partition).code())?;
                // An offline log dir serves nothing (Kafka: KAFKA_STORAGE_ERROR), as Fetch.
                h.check_online()
                    .map_err(|_| ResponseError::KafkaStorageError.code())?;
                let log = h.read();
                check_epoch(p.current_leader_epoch, current_epoch(&log))?;
                Ok::<_, i16>(leader_end_offset_for(&log, LeaderEpoch(p.leader_epoch)))
            })();
            match answer {
                Ok((epoch, end)) => {
                    part.error_code = 0;
                    part.leader_epoch = epoch.get();
                    part.end_offset = end.get();
                }
                Err(code) => part.error_code = code,
            }
            out.partitions.push(part);
        }
        resp.topics.push(out);
    }
    resp
}

/// DeleteRecords v0–2: raises each partition's log start offset to the requested offset (-1 = the
/// high watermark), deleting whole segments below it; an offset above the high watermark is
/// OFFSET_OUT_OF_RANGE. Answers the log start offset after the call as the low watermark (-1 on
/// error). Internal topics are refused with INVALID_TOPIC_EXCEPTION, as Kafka does, mirror
/// (read-only) topics READ_ONLY_TOPIC. A partition named twice is answered once, for the last
/// offset named.
pub fn delete_records(b: &Broker, r: DeleteRecordsRequest, _v: i16) -> DeleteRecordsResponse {
    // Kafka keys the request by partition (`handleDeleteRecordsRequest` fills a map): a partition
    // named twice is deleted up to the last offset named and answered once. Topics and partitions
    // keep the order they were first named in; indexed, not searched, so a request of many
    // topics or partitions stays linear.
    let mut asked: Vec<(TopicName, Vec<(i32, i64)>)> = vec![];
    let mut topic_at: HashMap<TopicName, usize> = HashMap::new();
    let mut partition_at: HashMap<(usize, i32), usize> = HashMap::new();
    for t in r.topics {
        let ti = *topic_at.entry(t.name.clone()).or_insert_with(|| {
            asked.push((t.name, vec![]));
            asked.len() - 1
        });
        let partitions = &mut asked[ti].1;
        for p in t.partitions {
            match partition_at.entry((ti, p.partition_index)) {
                Entry::Occupied(at) => partitions[*at.get()].1 = p.offset,
                Entry::Vacant(at) => {
                    at.insert(partitions.len());
                    partitions.push((p.partition_index, p.offset));
                }
            }
        }
    }
    let mut resp = DeleteRecordsResponse::default();
    let mut moved = false;
    for (name, partitions) in asked {
        let topic = name.0.as_str().to_string();
        let mut out = DeleteRecordsTopicResult::default();
        out.name = name;
        for (partition_index, offset) in partitions {
            let mut part = DeleteRecordsPartitionResult::default();
            part.partition_index = partition_index;
            match delete_one(b, &topic, partition_index, offset) {
                Ok((low_watermark, did_move)) => {
                    if did_move {
                        // A long poll waiting below the new log start has an answer now
                        // (OFFSET_OUT_OF_RANGE) rather than at its max_wait_ms.
                        b.appends.notify_partition(&topic, partition_index);
                        moved = true;
                    }
                    part.error_code = 0;
                    part.low_watermark = low_watermark;
                }
                Err(code) => {
                    part.error_code = code;
                    part.low_watermark = -1;
                }
            }
            out.partitions.push(part);
        }
        resp.topics.push(out);
    }
    if moved {
        // Store the new log start offsets now rather than at the next periodic checkpoint, so a
        // crash cannot bring deleted records back.
        if let Err(e) = b.logs.checkpoint() {
            tracing::warn!(
                "checkpointing log start offsets after DeleteRecords: {}",
                ErrorChain(&e)
            );
        }
    }
    resp
}

/// One partition: the new log start and whether it moved.
fn delete_one(b: &Broker, topic: &str, partition: i32, offset: i64) -> Result<(i64, bool), i16> {
    if INTERNAL_TOPICS.contains(&topic) {
        return Err(ResponseError::InvalidTopicException.code());
    }
    let h = b
        .partition(topic, partition)
        .ok_or_else(|| b.missing_partition_error(topic, partition).code())?;
    // An offline log dir serves nothing (Kafka: KAFKA_STORAGE_ERROR), as Fetch.
    h.check_online()
        .map_err(|_| ResponseError::KafkaStorageError.code())?;
    let mut log = h.write();
    // A mirror topic's log start follows its source's (KIP-1279; the mirror moves it through
    // the same engine call, which so cannot refuse it): a client's deletion is a write to a
    // read-only partition, refused as Produce is.
    if log.is_read_only() {
        return Err(READ_ONLY_TOPIC);
    }
    let target = if offset == DELETE_TO_HIGH_WATERMARK {
        log.high_watermark()
    } else {
        Offset(offset)
    };
    if target.get() < 0 {
        return Err(ResponseError::OffsetOutOfRange.code());
    }
    let moved = log
        .maybe_increment_log_start_offset(target)
        .map_err(|e| engine_error_code(&e))?;
    Ok((log.log_start_offset().get(), moved))
}

/// DescribeProducers v0 (what the Java AdminClient's `describeProducers` sends): per partition,
/// the producers its producer state holds (Kafka's `UnifiedLog.activeProducers`): id, epoch,
/// last sequence (−1 when only markers were seen), last timestamp, coordinator epoch of its
/// last marker and the first offset of its open transaction (−1 for none). An invalid topic
/// name is INVALID_TOPIC_EXCEPTION, an unknown partition UNKNOWN_TOPIC_OR_PARTITION, one in an
/// offline log dir KAFKA_STORAGE_ERROR.
pub fn describe_producers(
    b: &Broker,
    r: DescribeProducersRequest,
    _v: i16,
) -> DescribeProducersResponse {
    // Each partition once, its topic's entries merged (as Kafka's results keyed by topic):
    // every answer carries the partition's whole producer list, so a repeated index multiplied
    // the response (a partition with thousands of producers, a million repetitions in a 4 MB
    // request).
    let mut index: HashMap<&str, usize> = HashMap::new();
    let mut asked: Vec<(&TopicName, Vec<i32>)> = vec![];
    let mut seen: HashSet<(&str, i32)> = HashSet::new();
    for t in &r.topics {
        for &p in &t.partition_indexes {
            if !seen.insert((t.name.0.as_str(), p)) {
                continue;
            }
            let i = *index.entry(t.name.0.as_str()).or_insert_with(|| {
                asked.push((&t.name, vec![]));
                asked.len() - 1
            });
            asked[i].1.push(p);
        }
    }
    let topics = asked
        .into_iter()
        .map(|(name, partitions)| {
            let topic = name.0.as_str();
            // As Kafka's `handleDescribeProducersRequest` (`checkValidTopic`): a name no topic
            // could have is INVALID_TOPIC_EXCEPTION with the reason, for each partition asked.
            let invalid = validate_topic_name(topic).err();
            let partitions = partitions
                .into_iter()
                .map(|p| {
                    let part = PartitionResponse::default().with_partition_index(p);
                    if let Some(e) = &invalid {
                        return part
                            .with_error_code(e.code)
                            .with_error_message(Some(StrBytes::from_string(e.message.clone())));
                    }
                    match active_producers(b, topic, p) {
                        Ok(producers) => part.with_active_producers(producers),
                        Err(code) => part.with_error_code(code),
                    }
                })
                .collect();
            TopicResponse::default()
                .with_name(name.clone())
                .with_partitions(partitions)
        })
        .collect();
    DescribeProducersResponse::default().with_topics(topics)
}

fn active_producers(b: &Broker, topic: &str, partition: i32) -> Result<Vec<ProducerState>, i16> {
    let h = b
        .partition(topic, partition)
        .ok_or_else(|| b.missing_partition_error(topic, partition).code())?;
    h.check_online()
        .map_err(|_| ResponseError::KafkaStorageError.code())?;
    let log = h.read();
    let mut producers: Vec<ProducerState> = log
        .producer_state()
        .producers()
        .map(|e| {
            ProducerState::default()
                .with_producer_id(ProducerId(e.producer_id.get()))
                .with_producer_epoch(i32::from(e.producer_epoch.get()))
                .with_last_sequence(e.last_seq().get())
                .with_last_timestamp(e.last_timestamp.get())
                .with_coordinator_epoch(e.coordinator_epoch)
                .with_current_txn_start_offset(e.current_txn_first_offset.map_or(-1, |o| o.get()))
        })
        .collect();
    producers.sort_by_key(|p| p.producer_id.0);
    Ok(producers)
}
