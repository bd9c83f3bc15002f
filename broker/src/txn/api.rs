//! The wire side: InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn,
//! DescribeTransactions and ListTransactions requests in, responses out, with Kafka's
//! per-version error codes.

use super::coordinator::TxnCoordinator;
use super::error::TxnError;
use super::state::TxnState;
use crate::errors::READ_ONLY_TOPIC;
use crate::topics::INTERNAL_TOPICS;
use kafka_protocol::ResponseError;
use kafka_protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnTopic;
use kafka_protocol::messages::add_partitions_to_txn_response::{
    AddPartitionsToTxnPartitionResult, AddPartitionsToTxnResult, AddPartitionsToTxnTopicResult,
};
use kafka_protocol::messages::describe_transactions_response::{
    TopicData, TransactionState as DescribedTxn,
};
use kafka_protocol::messages::list_transactions_response::TransactionState as ListedTxn;
use kafka_protocol::messages::write_txn_markers_response::{
    WritableTxnMarkerPartitionResult, WritableTxnMarkerResult, WritableTxnMarkerTopicResult,
};
use kafka_protocol::messages::{
    AddOffsetsToTxnRequest, AddOffsetsToTxnResponse, AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse, ApiKey, DescribeTransactionsRequest, DescribeTransactionsResponse,
    EndTxnRequest, EndTxnResponse, InitProducerIdRequest, InitProducerIdResponse,
    ListTransactionsRequest, ListTransactionsResponse, RequestKind, ResponseKind, TopicName,
    TransactionalId, WriteTxnMarkersRequest, WriteTxnMarkersResponse,
};
use kafka_protocol::protocol::StrBytes;
use mirrorlog_index::{ProducerEpoch, ProducerId, TopicPartition};
use mirrorlog_mirror::state::MIRROR_STATE_TOPIC;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

/// Every state a ListTransactions filter may name (Kafka's `TransactionState` names).
const ALL_STATES: [TxnState; 8] = [
    TxnState::Empty,
    TxnState::Ongoing,
    TxnState::PrepareCommit,
    TxnState::PrepareAbort,
    TxnState::CompleteCommit,
    TxnState::CompleteAbort,
    TxnState::Dead,
    TxnState::PrepareEpochFence,
];

/// The first InitProducerId version that knows PRODUCER_FENCED (KIP-588); older ones get
/// INVALID_PRODUCER_EPOCH.
const INIT_PRODUCER_ID_FENCED_SINCE: i16 = 4;
/// The same for AddPartitionsToTxn, AddOffsetsToTxn and EndTxn.
const TXN_FENCED_SINCE: i16 = 2;
/// The first AddPartitionsToTxn version that knows TRANSACTION_ABORTABLE (KIP-890).
const ADD_PARTITIONS_ABORTABLE_SINCE: i16 = 5;
/// Never: the error does not occur in these APIs.
const NEVER: i16 = i16::MAX;

impl TxnCoordinator {
    /// The versions of `api` the coordinator implements, `None` for an API it does not own.
    ///
    /// - InitProducerId 0–5 (v3+ KIP-360 expected producer id/epoch; 2PC fields of v6 are not
    ///   decodable by the codec);
    /// - AddPartitionsToTxn 0–5 (v4+ is the broker-to-broker batched form: `verify_only`
    ///   transactions are verified, the others added);
    /// - AddOffsetsToTxn 0–4;
    /// - EndTxn 0–4: v5 is KIP-890 transactions v2 (epoch bump on every EndTxn, partitions
    ///   added implicitly by produce), which mirrorlog does not implement;
    /// - DescribeTransactions 0 and ListTransactions 0–1 (v2's transactional id pattern is not
    ///   implemented);
    /// - WriteTxnMarkers 1 (the Admin API's `abortTransaction`).
    pub fn supported_versions(api: ApiKey) -> Option<(i16, i16)> {
        match api {
            ApiKey::InitProducerId => Some((0, 5)),
            ApiKey::AddPartitionsToTxn => Some((0, 5)),
            ApiKey::AddOffsetsToTxn => Some((0, 4)),
            ApiKey::EndTxn => Some((0, 4)),
            ApiKey::DescribeTransactions => Some((0, 0)),
            // v2 (transaction version in each marker) is not decodable by the codec.
            ApiKey::WriteTxnMarkers => Some((1, 1)),
            // v2 adds a transactional id regex filter (KIP-1152), not implemented.
            ApiKey::ListTransactions => Some((0, 1)),
            _ => None,
        }
    }

    /// Handles InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn,
    /// DescribeTransactions, ListTransactions and WriteTxnMarkers. A version
    /// outside [`supported_versions`](Self::supported_versions) is answered
    /// UNSUPPORTED_VERSION. May block on durable writes.
    ///
    /// # Panics
    /// On any other request kind (the caller routes requests).
    pub fn handle(&self, api_version: i16, request: RequestKind) -> ResponseKind {
        match request {
            RequestKind::InitProducerId(r) => {
                ResponseKind::InitProducerId(self.handle_init_producer_id(api_version, r))
            }
            RequestKind::AddPartitionsToTxn(r) => {
                ResponseKind::AddPartitionsToTxn(self.handle_add_partitions(api_version, r))
            }
            RequestKind::AddOffsetsToTxn(r) => {
                ResponseKind::AddOffsetsToTxn(self.handle_add_offsets(api_version, r))
            }
            RequestKind::EndTxn(r) => ResponseKind::EndTxn(self.handle_end_txn(api_version, r)),
            RequestKind::DescribeTransactions(r) => {
                ResponseKind::DescribeTransactions(self.handle_describe_transactions(r))
            }
            RequestKind::WriteTxnMarkers(r) => {
                ResponseKind::WriteTxnMarkers(self.handle_write_txn_markers(r))
            }
            RequestKind::ListTransactions(r) => {
                ResponseKind::ListTransactions(self.handle_list_transactions(api_version, r))
            }
            _ => panic!("the transaction coordinator was handed a request it does not own"),
        }
    }

    /// DescribeTransactions, as Kafka's `handleDescribeTransactions`: each id's state, producer
    /// id and epoch, timeout, start time and partitions (by topic); an empty id is
    /// INVALID_REQUEST, one whose state partition is not loaded NOT_COORDINATOR, an unknown or
    /// expiring one TRANSACTIONAL_ID_NOT_FOUND.
    fn handle_describe_transactions(
        &self,
        r: DescribeTransactionsRequest,
    ) -> DescribeTransactionsResponse {
        // Each id once: an answer carries the transaction's partitions, so a repeated id
        // multiplied the response.
        let mut seen = HashSet::new();
        let states = r
            .transactional_ids
            .into_iter()
            .filter(|id| seen.insert(id.0.clone()))
            .map(|id| {
                let out = DescribedTxn::default().with_transactional_id(id.clone());
                if id.0.is_empty() {
                    return out.with_error_code(ResponseError::InvalidRequest.code());
                }
                if !self.serves(id.0.as_str()) {
                    // Its `__transaction_state` partition is not loaded (an offline directory):
                    // the id's state is unknown here, not absent (Kafka's getTransactionState).
                    return out.with_error_code(ResponseError::NotCoordinator.code());
                }
                let Some(m) = self.transaction(id.0.as_str()) else {
                    return out.with_error_code(ResponseError::TransactionalIdNotFound.code());
                };
                let mut topics: Vec<TopicData> = vec![];
                for tp in &m.partitions {
                    match topics.last_mut() {
                        Some(t) if t.topic.0.as_str() == tp.topic => {
                            t.partitions.push(tp.partition)
                        }
                        _ => topics.push(
                            TopicData::default()
                                .with_topic(TopicName(StrBytes::from_string(tp.topic.clone())))
                                .with_partitions(vec![tp.partition]),
                        ),
                    }
                }
                out.with_producer_id(m.producer_id.get().into())
                    .with_producer_epoch(m.producer_epoch.get())
                    .with_transaction_state(StrBytes::from_static_str(m.state.name()))
                    .with_transaction_timeout_ms(m.txn_timeout_ms)
                    .with_transaction_start_time_ms(m.txn_start_timestamp_ms)
                    .with_topics(topics)
            })
            .collect();
        DescribeTransactionsResponse::default().with_transaction_states(states)
    }

    /// WriteTxnMarkers v1: every marker's partitions, each answered with its own error code
    /// ([`TxnCoordinator::write_requested_marker`]). A partition named more than once in a
    /// marker gets one marker and one answer, as in Kafka (which collects a marker's partitions
    /// into a map): a repeated partition must not append (and sync) once per repetition.
    fn handle_write_txn_markers(&self, r: WriteTxnMarkersRequest) -> WriteTxnMarkersResponse {
        let markers = r
            .markers
            .into_iter()
            .map(|m| {
                // The marker's partitions by topic, each once, in request order.
                let mut seen: HashSet<(&str, i32)> = HashSet::new();
                let mut index: HashMap<&str, usize> = HashMap::new();
                let mut by_topic: Vec<(&TopicName, Vec<i32>)> = vec![];
                for t in &m.topics {
                    for &p in &t.partition_indexes {
                        if !seen.insert((t.name.0.as_str(), p)) {
                            continue;
                        }
                        let i = *index.entry(t.name.0.as_str()).or_insert_with(|| {
                            by_topic.push((&t.name, vec![]));
                            by_topic.len() - 1
                        });
                        by_topic[i].1.push(p);
                    }
                }
                let topics = by_topic
                    .into_iter()
                    .map(|(name, partitions)| {
                        let partitions = partitions
                            .into_iter()
                            .map(|partition| {
                                let tp = TopicPartition {
                                    topic: name.0.to_string(),
                                    partition,
                                };
                                let code = self.marker_refusal(&tp).unwrap_or_else(|| {
                                    self.write_requested_marker(
                                        &tp,
                                        ProducerId(m.producer_id.0),
                                        ProducerEpoch(m.producer_epoch),
                                        m.transaction_result,
                                        m.coordinator_epoch,
                                    )
                                });
                                WritableTxnMarkerPartitionResult::default()
                                    .with_partition_index(partition)
                                    .with_error_code(code)
                            })
                            .collect();
                        WritableTxnMarkerTopicResult::default()
                            .with_name(name.clone())
                            .with_partitions(partitions)
                    })
                    .collect();
                WritableTxnMarkerResult::default()
                    .with_producer_id(m.producer_id)
                    .with_topics(topics)
            })
            .collect();
        WriteTxnMarkersResponse::default().with_markers(markers)
    }

    /// Why a client's marker may not be written to `tp`, before the coordinator looks at it:
    /// a partition in an offline data directory is KAFKA_STORAGE_ERROR (Kafka's
    /// `getPartitionOrException`; it is not unknown, only unreadable), and a partition of
    /// `__mirror_state` is INVALID_TOPIC_EXCEPTION, as a Produce there: only the mirror state
    /// store writes it, and no transaction of a client ever reaches it.
    fn marker_refusal(&self, tp: &TopicPartition) -> Option<i16> {
        if self.offline(tp) {
            return Some(ResponseError::KafkaStorageError.code());
        }
        (tp.topic == MIRROR_STATE_TOPIC && self.hosted_read_only(tp).is_some())
            .then_some(ResponseError::InvalidTopicException.code())
    }

    /// ListTransactions v0–1, as Kafka's `listTransactionStates`: every transactional id but
    /// the expiring ones, filtered by state names (unknown names are answered back in
    /// `unknown_state_filters` and match nothing: only unknown names list nothing), producer
    /// ids and (v1) a minimum running time.
    fn handle_list_transactions(
        &self,
        version: i16,
        r: ListTransactionsRequest,
    ) -> ListTransactionsResponse {
        let mut states = BTreeSet::new();
        let mut unknown = vec![];
        for name in &r.state_filters {
            match ALL_STATES.iter().find(|s| s.name() == name.as_str()) {
                Some(s) => {
                    states.insert(s.id());
                }
                None => unknown.push(name.clone()),
            }
        }
        let producer_ids: BTreeSet<i64> = r.producer_id_filters.iter().map(|p| p.0).collect();
        let duration_ms = if version >= 1 { r.duration_filter } else { -1 };
        let now_ms = self.now_ms();
        let listed = self
            .transactions()
            .into_iter()
            .filter(|(_, m)| {
                (producer_ids.is_empty() || producer_ids.contains(&m.producer_id.get()))
                    // As Kafka: any state filter, even only unknown names, filters.
                    && (r.state_filters.is_empty() || states.contains(&m.state.id()))
                    && (duration_ms < 0
                        || now_ms.saturating_sub(m.txn_start_timestamp_ms) > duration_ms)
            })
            .map(|(id, m)| {
                ListedTxn::default()
                    .with_transactional_id(TransactionalId(StrBytes::from_string(id)))
                    .with_producer_id(m.producer_id.get().into())
                    .with_transaction_state(StrBytes::from_static_str(m.state.name()))
            })
            .collect();
        ListTransactionsResponse::default()
            .with_unknown_state_filters(unknown)
            .with_transaction_states(listed)
    }

    fn handle_init_producer_id(
        &self,
        version: i16,
        r: InitProducerIdRequest,
    ) -> InitProducerIdResponse {
        let mut resp = InitProducerIdResponse::default();
        resp.producer_id = (-1).into();
        resp.producer_epoch = -1;
        if !supported(ApiKey::InitProducerId, version) {
            resp.error_code = ResponseError::UnsupportedVersion.code();
            return resp;
        }
        let result = match (r.producer_id.0, r.producer_epoch) {
            (-1, -1) => Ok(None),
            (-1, _) | (_, -1) => Err(TxnError::InvalidRequest(
                "producer id and epoch must be given together",
            )),
            (p, e) => Ok(Some((ProducerId(p), ProducerEpoch(e)))),
        }
        .and_then(|expected| {
            self.init_producer_id(
                r.transactional_id.as_ref().map(|t| t.0.as_str()),
                r.transaction_timeout_ms,
                expected,
            )
        });
        match result {
            Ok((pid, epoch)) => {
                resp.producer_id = pid.get().into();
                resp.producer_epoch = epoch.get();
            }
            Err(e) => {
                resp.error_code = e.code_for(version, INIT_PRODUCER_ID_FENCED_SINCE, NEVER);
            }
        }
        resp
    }

    fn handle_add_partitions(
        &self,
        version: i16,
        r: AddPartitionsToTxnRequest,
    ) -> AddPartitionsToTxnResponse {
        let mut resp = AddPartitionsToTxnResponse::default();
        if !supported(ApiKey::AddPartitionsToTxn, version) {
            resp.error_code = ResponseError::UnsupportedVersion.code();
            return resp;
        }
        if version <= 3 {
            resp.results_by_topic_v3_and_below = self.add_partitions_results(
                version,
                r.v3_and_below_transactional_id.0.as_str(),
                ProducerId(r.v3_and_below_producer_id.0),
                ProducerEpoch(r.v3_and_below_producer_epoch),
                &r.v3_and_below_topics,
                false,
            );
        } else {
            resp.results_by_transaction = r
                .transactions
                .iter()
                .map(|t| {
                    let mut out = AddPartitionsToTxnResult::default();
                    out.transactional_id = t.transactional_id.clone();
                    out.topic_results = self.add_partitions_results(
                        version,
                        t.transactional_id.0.as_str(),
                        ProducerId(t.producer_id.0),
                        ProducerEpoch(t.producer_epoch),
                        &t.topics,
                        t.verify_only,
                    );
                    out
                })
                .collect();
        }
        resp
    }

    /// One transaction's per-partition results, as Kafka's `KafkaApis` builds them: a client's
    /// (v0–3) partitions of internal topics are TOPIC_AUTHORIZATION_FAILED
    /// ([`client_refused_internal`]), partitions the broker does not have
    /// UNKNOWN_TOPIC_OR_PARTITION (mirror partitions READ_ONLY_TOPIC) and, when any is, the rest
    /// OPERATION_NOT_ATTEMPTED; otherwise the coordinator's answer for all. A partition of a data
    /// directory offline since start is not unknown (Kafka checks the metadata, which lists it):
    /// it is added, whether or not it is a mirror's (that is in its unread log).
    fn add_partitions_results(
        &self,
        version: i16,
        transactional_id: &str,
        producer_id: ProducerId,
        producer_epoch: ProducerEpoch,
        topics: &[AddPartitionsToTxnTopic],
        verify_only: bool,
    ) -> Vec<AddPartitionsToTxnTopicResult> {
        let code =
            |e: &TxnError| e.code_for(version, TXN_FENCED_SINCE, ADD_PARTITIONS_ABORTABLE_SINCE);
        let mut tps: Vec<TopicPartition> = vec![];
        // Each partition once, in request order; a set, so a huge request costs linear time.
        let mut seen = std::collections::HashSet::new();
        for t in topics {
            for p in &t.partitions {
                let tp = TopicPartition {
                    topic: t.name.0.to_string(),
                    partition: *p,
                };
                if seen.insert(tp.clone()) {
                    tps.push(tp);
                }
            }
        }
        let mut codes: BTreeMap<TopicPartition, i16> = BTreeMap::new();
        if verify_only {
            match self.verify_partitions(transactional_id, producer_id, producer_epoch, &tps) {
                Ok(missing) => {
                    for tp in &tps {
                        let c = if missing.contains(tp) {
                            code(&TxnError::PartitionNotInTransaction)
                        } else {
                            0
                        };
                        codes.insert(tp.clone(), c);
                    }
                }
                Err(e) => codes.extend(tps.iter().map(|tp| (tp.clone(), code(&e)))),
            }
        } else {
            for tp in &tps {
                if client_refused_internal(version, &tp.topic) {
                    codes.insert(tp.clone(), ResponseError::TopicAuthorizationFailed.code());
                    continue;
                }
                match self.hosted_read_only(tp) {
                    // In a data directory that was offline at start: the partition exists (Kafka's
                    // metadata has it), so it joins; the Produce to it fails, and its marker waits
                    // for the directory.
                    None if self.offline(tp) => {}
                    None => {
                        codes.insert(tp.clone(), ResponseError::UnknownTopicOrPartition.code());
                    }
                    Some(true) => {
                        codes.insert(tp.clone(), READ_ONLY_TOPIC);
                    }
                    Some(false) => {}
                }
            }
            if codes.is_empty() {
                let c = match self.add_partitions(
                    transactional_id,
                    producer_id,
                    producer_epoch,
                    &tps,
                ) {
                    Ok(()) => 0,
                    Err(e) => code(&e),
                };
                codes.extend(tps.iter().map(|tp| (tp.clone(), c)));
            } else {
                for tp in &tps {
                    codes
                        .entry(tp.clone())
                        .or_insert(ResponseError::OperationNotAttempted.code());
                }
            }
        }
        // Topics in request order, each once.
        let mut out: Vec<AddPartitionsToTxnTopicResult> = vec![];
        for tp in &tps {
            let mut pr = AddPartitionsToTxnPartitionResult::default();
            pr.partition_index = tp.partition;
            pr.partition_error_code = codes[tp];
            match out.iter_mut().find(|t| t.name.0.as_str() == tp.topic) {
                Some(t) => t.results_by_partition.push(pr),
                None => {
                    let name = topics
                        .iter()
                        .find(|t| t.name.0.as_str() == tp.topic)
                        .map(|t| t.name.clone())
                        .expect("the topic came from the request");
                    let mut t = AddPartitionsToTxnTopicResult::default();
                    t.name = name;
                    t.results_by_partition.push(pr);
                    out.push(t);
                }
            }
        }
        out
    }

    fn handle_add_offsets(
        &self,
        version: i16,
        r: AddOffsetsToTxnRequest,
    ) -> AddOffsetsToTxnResponse {
        let mut resp = AddOffsetsToTxnResponse::default();
        resp.error_code = if !supported(ApiKey::AddOffsetsToTxn, version) {
            ResponseError::UnsupportedVersion.code()
        } else {
            match self.add_offsets(
                r.transactional_id.0.as_str(),
                ProducerId(r.producer_id.0),
                ProducerEpoch(r.producer_epoch),
                r.group_id.0.as_str(),
            ) {
                Ok(()) => 0,
                Err(e) => e.code_for(version, TXN_FENCED_SINCE, NEVER),
            }
        };
        resp
    }

    fn handle_end_txn(&self, version: i16, r: EndTxnRequest) -> EndTxnResponse {
        let mut resp = EndTxnResponse::default();
        resp.error_code = if !supported(ApiKey::EndTxn, version) {
            ResponseError::UnsupportedVersion.code()
        } else {
            match self.end_txn(
                r.transactional_id.0.as_str(),
                ProducerId(r.producer_id.0),
                ProducerEpoch(r.producer_epoch),
                r.committed,
            ) {
                Ok(()) => 0,
                Err(e) => e.code_for(version, TXN_FENCED_SINCE, NEVER),
            }
        };
        resp
    }
}

/// Whether AddPartitionsToTxn at `version` refuses a partition of `topic` as an internal one:
/// Kafka's `KafkaApis` answers TOPIC_AUTHORIZATION_FAILED for the internal topics a client
/// (v0–3) names, whose logs only their coordinators write (EndTxn would write its marker
/// there); the broker-to-broker versions (v4+) skip the check, as in Kafka, but never take
/// `__mirror_state`, which no Kafka broker knows.
fn client_refused_internal(version: i16, topic: &str) -> bool {
    topic == MIRROR_STATE_TOPIC || (version <= 3 && INTERNAL_TOPICS.contains(&topic))
}

fn supported(api: ApiKey, version: i16) -> bool {
    TxnCoordinator::supported_versions(api).is_some_and(|(lo, hi)| (lo..=hi).contains(&version))
}
