//! The wire side: InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn and EndTxn requests in,
//! responses out, with Kafka's per-version error codes.

use super::coordinator::TxnCoordinator;
use super::error::TxnError;
use crate::errors::READ_ONLY_TOPIC;
use kafka_protocol::ResponseError;
use kafka_protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnTopic;
use kafka_protocol::messages::add_partitions_to_txn_response::{
    AddPartitionsToTxnPartitionResult, AddPartitionsToTxnResult, AddPartitionsToTxnTopicResult,
};
use kafka_protocol::messages::{
    AddOffsetsToTxnRequest, AddOffsetsToTxnResponse, AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse, ApiKey, EndTxnRequest, EndTxnResponse, InitProducerIdRequest,
    InitProducerIdResponse, RequestKind, ResponseKind,
};
use mirrorlog_index::{ProducerEpoch, ProducerId, TopicPartition};
use std::collections::BTreeMap;

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
    ///   added implicitly by produce), which mirrorlog does not implement.
    pub fn supported_versions(api: ApiKey) -> Option<(i16, i16)> {
        match api {
            ApiKey::InitProducerId => Some((0, 5)),
            ApiKey::AddPartitionsToTxn => Some((0, 5)),
            ApiKey::AddOffsetsToTxn => Some((0, 4)),
            ApiKey::EndTxn => Some((0, 4)),
            _ => None,
        }
    }

    /// Handles InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn and EndTxn. A version
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
            _ => panic!("the transaction coordinator was handed a request it does not own"),
        }
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

    /// One transaction's per-partition results, as Kafka's `KafkaApis` builds them: partitions
    /// the broker does not have are UNKNOWN_TOPIC_OR_PARTITION (mirror partitions
    /// READ_ONLY_TOPIC) and the rest OPERATION_NOT_ATTEMPTED; otherwise the coordinator's
    /// answer for all.
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
        for t in topics {
            for p in &t.partitions {
                let tp = TopicPartition {
                    topic: t.name.0.to_string(),
                    partition: *p,
                };
                if !tps.contains(&tp) {
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
                match self.hosted_read_only(tp) {
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

fn supported(api: ApiKey, version: i16) -> bool {
    TxnCoordinator::supported_versions(api).is_some_and(|(lo, hi)| (lo..=hi).contains(&version))
}
