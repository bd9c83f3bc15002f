//! A minimal synchronous Kafka client for `mirrorlog demo` and tools: one connection, the
//! requests a producer and an operator need (create topics, produce, transactions, commit and
//! fetch group offsets). Versions are fixed ones every Kafka ≥ 2.8 and mirrorlog answer.

use bytes::{Buf, BufMut, Bytes, BytesMut};
use kafka_protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnTopic;
use kafka_protocol::messages::create_topics_request::{CreatableTopic, CreatableTopicConfig};
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::offset_fetch_request::OffsetFetchRequestTopic;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// A client error: transport, or a Kafka error code with context.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The connection failed.
    #[error("connection: {0}")]
    Io(#[from] std::io::Error),
    /// A request or response did not encode/decode.
    #[error("protocol: {0}")]
    Protocol(String),
    /// The broker answered an error code.
    #[error("{what}: Kafka error {code}")]
    Kafka {
        /// What was asked.
        what: String,
        /// The error code.
        code: i16,
    },
}

fn check(what: impl Into<String>, code: i16) -> Result<(), ClientError> {
    if code == 0 {
        Ok(())
    } else {
        Err(ClientError::Kafka {
            what: what.into(),
            code,
        })
    }
}

fn sb(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_string())
}

/// One connection to one broker.
#[derive(Debug)]
pub struct Client {
    stream: TcpStream,
    correlation: i32,
}

impl Client {
    /// Connects (with a 30 s timeout on every read and write).
    ///
    /// # Errors
    /// The broker cannot be reached.
    pub fn connect(addr: &str) -> Result<Client, ClientError> {
        let stream = TcpStream::connect(addr)?;
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(Duration::from_secs(30)))?;
        stream.set_write_timeout(Some(Duration::from_secs(30)))?;
        Ok(Client {
            stream,
            correlation: 0,
        })
    }

    /// Sets the timeout of every later read and write (30 s from [`Client::connect`]): a
    /// request the broker takes longer to answer (creating thousands of partitions on a slow
    /// disk) needs more.
    ///
    /// # Errors
    /// The socket refused the setting.
    pub fn set_timeout(&mut self, timeout: Duration) -> Result<(), ClientError> {
        self.stream.set_read_timeout(Some(timeout))?;
        self.stream.set_write_timeout(Some(timeout))?;
        Ok(())
    }

    fn call<Req: Encodable, Resp: Decodable>(
        &mut self,
        api: ApiKey,
        version: i16,
        req: &Req,
    ) -> Result<Resp, ClientError> {
        self.correlation += 1;
        let mut header = RequestHeader::default();
        header.request_api_key = api as i16;
        header.request_api_version = version;
        header.correlation_id = self.correlation;
        header.client_id = Some(sb("mirrorlog-client"));
        let mut body = BytesMut::new();
        let p = |e: anyhow::Error| ClientError::Protocol(e.to_string());
        header
            .encode(&mut body, api.request_header_version(version))
            .map_err(p)?;
        req.encode(&mut body, version).map_err(p)?;
        let mut frame = BytesMut::with_capacity(body.len() + 4);
        frame.put_i32(body.len() as i32);
        frame.extend_from_slice(&body);
        self.stream.write_all(&frame)?;
        let mut len = [0u8; 4];
        self.stream.read_exact(&mut len)?;
        let mut buf = vec![0u8; i32::from_be_bytes(len).max(0) as usize];
        self.stream.read_exact(&mut buf)?;
        let mut buf = Bytes::from(buf);
        let rh =
            ResponseHeader::decode(&mut buf, api.response_header_version(version)).map_err(p)?;
        if rh.correlation_id != self.correlation {
            return Err(ClientError::Protocol(format!(
                "correlation id {} for request {}",
                rh.correlation_id, self.correlation
            )));
        }
        let resp = Resp::decode(&mut buf, version).map_err(p)?;
        if buf.has_remaining() {
            return Err(ClientError::Protocol(format!(
                "{} bytes left after the response",
                buf.remaining()
            )));
        }
        Ok(resp)
    }

    /// Sends one mirror RPC (API keys 94–106, [`crate::mirror_rpc`]) and reads its answer; the
    /// answer's error codes are the caller's to read.
    ///
    /// # Errors
    /// Transport, or a response that does not decode.
    pub fn mirror_call(
        &mut self,
        request: &crate::mirror_rpc::MirrorRequest,
    ) -> Result<crate::mirror_rpc::MirrorResponse, ClientError> {
        self.correlation += 1;
        self.stream
            .write_all(&request.to_frame(self.correlation, "mirrorlog-mirrors"))?;
        let mut len = [0u8; 4];
        self.stream.read_exact(&mut len)?;
        let mut buf = vec![0u8; i32::from_be_bytes(len).max(0) as usize];
        self.stream.read_exact(&mut buf)?;
        crate::mirror_rpc::MirrorResponse::from_frame(
            request.api_key(),
            self.correlation,
            Bytes::from(buf),
        )
        .map_err(|e| ClientError::Protocol(e.to_string()))
    }

    /// DeleteRecords: moves a partition's log start offset up to `offset`; returns the new log
    /// start.
    ///
    /// # Errors
    /// Transport or the broker's error code.
    pub fn delete_records(
        &mut self,
        topic: &str,
        partition: i32,
        offset: i64,
    ) -> Result<i64, ClientError> {
        use kafka_protocol::messages::delete_records_request::{
            DeleteRecordsPartition, DeleteRecordsTopic,
        };
        let mut p = DeleteRecordsPartition::default();
        p.partition_index = partition;
        p.offset = offset;
        let mut t = DeleteRecordsTopic::default();
        t.name = TopicName(sb(topic));
        t.partitions = vec![p];
        let mut r = DeleteRecordsRequest::default();
        r.topics = vec![t];
        r.timeout_ms = 30_000;
        let resp: DeleteRecordsResponse = self.call(ApiKey::DeleteRecords, 2, &r)?;
        let what = format!("delete records of {topic}-{partition} below {offset}");
        let p = resp
            .topics
            .iter()
            .flat_map(|t| t.partitions.iter())
            .find(|p| p.partition_index == partition)
            .ok_or_else(|| ClientError::Protocol(format!("{what}: no answer")))?;
        check(what, p.error_code)?;
        Ok(p.low_watermark)
    }

    /// Deletes a topic by name.
    ///
    /// # Errors
    /// Transport or the broker's error code.
    pub fn delete_topic(&mut self, name: &str) -> Result<(), ClientError> {
        let mut r = DeleteTopicsRequest::default();
        r.topic_names = vec![TopicName(sb(name))];
        r.timeout_ms = 30_000;
        let resp: DeleteTopicsResponse = self.call(ApiKey::DeleteTopics, 5, &r)?;
        for t in resp.responses {
            check(format!("delete topic {name}"), t.error_code)?;
        }
        Ok(())
    }

    /// Creates a topic (TOPIC_ALREADY_EXISTS is an error).
    ///
    /// # Errors
    /// Transport or the broker's error code.
    pub fn create_topic(
        &mut self,
        name: &str,
        partitions: i32,
        configs: &[(&str, &str)],
    ) -> Result<(), ClientError> {
        let mut t = CreatableTopic::default();
        t.name = TopicName(sb(name));
        t.num_partitions = partitions;
        t.replication_factor = -1;
        t.configs = configs
            .iter()
            .map(|(k, v)| {
                let mut c = CreatableTopicConfig::default();
                c.name = sb(k);
                c.value = Some(sb(v));
                c
            })
            .collect();
        let mut r = CreateTopicsRequest::default();
        r.topics = vec![t];
        r.timeout_ms = 30_000;
        let resp: CreateTopicsResponse = self.call(ApiKey::CreateTopics, 5, &r)?;
        for t in resp.topics {
            check(format!("create topic {name}"), t.error_code)?;
        }
        Ok(())
    }

    /// Produces one record batch (built with `mirrorlog_segment::BatchBuilder`, base offset 0)
    /// to a partition; returns the base offset assigned.
    ///
    /// # Errors
    /// Transport or the broker's error code.
    pub fn produce(
        &mut self,
        topic: &str,
        partition: i32,
        batch: Bytes,
        acks: i16,
        transactional_id: Option<&str>,
    ) -> Result<i64, ClientError> {
        let mut pd = PartitionProduceData::default();
        pd.index = partition;
        pd.records = Some(batch);
        let mut td = TopicProduceData::default();
        td.name = TopicName(sb(topic));
        td.partition_data = vec![pd];
        let mut r = ProduceRequest::default();
        r.acks = acks;
        r.timeout_ms = 30_000;
        r.transactional_id = transactional_id.map(|t| TransactionalId(sb(t)));
        r.topic_data = vec![td];
        let resp: ProduceResponse = self.call(ApiKey::Produce, 9, &r)?;
        let p = resp
            .responses
            .first()
            .and_then(|t| t.partition_responses.first())
            .ok_or_else(|| ClientError::Protocol("empty produce response".into()))?;
        check(format!("produce to {topic}-{partition}"), p.error_code)?;
        Ok(p.base_offset)
    }

    /// InitProducerId: `(producer id, epoch)`, for a transactional id or an idempotent producer.
    ///
    /// # Errors
    /// Transport or the broker's error code.
    pub fn init_producer_id(
        &mut self,
        transactional_id: Option<&str>,
    ) -> Result<(i64, i16), ClientError> {
        let mut r = InitProducerIdRequest::default();
        r.transactional_id = transactional_id.map(|t| TransactionalId(sb(t)));
        r.transaction_timeout_ms = 60_000;
        r.producer_id = ProducerId(-1);
        r.producer_epoch = -1;
        let resp: InitProducerIdResponse = self.call(ApiKey::InitProducerId, 3, &r)?;
        check("init producer id", resp.error_code)?;
        Ok((resp.producer_id.0, resp.producer_epoch))
    }

    /// AddPartitionsToTxn for one transaction.
    ///
    /// # Errors
    /// Transport or the broker's error code.
    pub fn add_partitions_to_txn(
        &mut self,
        txn: &str,
        pid: i64,
        epoch: i16,
        topic: &str,
        partitions: &[i32],
    ) -> Result<(), ClientError> {
        let mut t = AddPartitionsToTxnTopic::default();
        t.name = TopicName(sb(topic));
        t.partitions = partitions.to_vec();
        let mut r = AddPartitionsToTxnRequest::default();
        r.v3_and_below_transactional_id = TransactionalId(sb(txn));
        r.v3_and_below_producer_id = ProducerId(pid);
        r.v3_and_below_producer_epoch = epoch;
        r.v3_and_below_topics = vec![t];
        let resp: AddPartitionsToTxnResponse = self.call(ApiKey::AddPartitionsToTxn, 3, &r)?;
        for t in resp.results_by_topic_v3_and_below {
            for p in t.results_by_partition {
                check(
                    format!("add {topic}-{} to {txn}", p.partition_index),
                    p.partition_error_code,
                )?;
            }
        }
        Ok(())
    }

    /// EndTxn: commit or abort.
    ///
    /// # Errors
    /// Transport or the broker's error code.
    pub fn end_txn(
        &mut self,
        txn: &str,
        pid: i64,
        epoch: i16,
        commit: bool,
    ) -> Result<(), ClientError> {
        let mut r = EndTxnRequest::default();
        r.transactional_id = TransactionalId(sb(txn));
        r.producer_id = ProducerId(pid);
        r.producer_epoch = epoch;
        r.committed = commit;
        let resp: EndTxnResponse = self.call(ApiKey::EndTxn, 3, &r)?;
        check(format!("end transaction {txn}"), resp.error_code)
    }

    /// AddOffsetsToTxn: the group's offsets partition joins the transaction.
    ///
    /// # Errors
    /// Transport or the broker's error code.
    pub fn add_offsets_to_txn(
        &mut self,
        txn: &str,
        pid: i64,
        epoch: i16,
        group: &str,
    ) -> Result<(), ClientError> {
        let mut r = AddOffsetsToTxnRequest::default();
        r.transactional_id = TransactionalId(sb(txn));
        r.producer_id = ProducerId(pid);
        r.producer_epoch = epoch;
        r.group_id = GroupId(sb(group));
        let resp: AddOffsetsToTxnResponse = self.call(ApiKey::AddOffsetsToTxn, 3, &r)?;
        check(format!("add offsets of {group} to {txn}"), resp.error_code)
    }

    /// TxnOffsetCommit of a group with no members (generation −1): offsets staged in the
    /// producer's transaction.
    ///
    /// # Errors
    /// Transport or the broker's error code.
    pub fn txn_offset_commit(
        &mut self,
        txn: &str,
        pid: i64,
        epoch: i16,
        group: &str,
        topic: &str,
        offsets: &[(i32, i64)],
    ) -> Result<(), ClientError> {
        use kafka_protocol::messages::txn_offset_commit_request::{
            TxnOffsetCommitRequestPartition, TxnOffsetCommitRequestTopic,
        };
        let mut t = TxnOffsetCommitRequestTopic::default();
        t.name = TopicName(sb(topic));
        t.partitions = offsets
            .iter()
            .map(|(p, o)| {
                let mut x = TxnOffsetCommitRequestPartition::default();
                x.partition_index = *p;
                x.committed_offset = *o;
                x.committed_leader_epoch = -1;
                x
            })
            .collect();
        let mut r = TxnOffsetCommitRequest::default();
        r.transactional_id = TransactionalId(sb(txn));
        r.group_id = GroupId(sb(group));
        r.producer_id = ProducerId(pid);
        r.producer_epoch = epoch;
        r.generation_id = -1;
        r.member_id = sb("");
        r.topics = vec![t];
        let resp: TxnOffsetCommitResponse = self.call(ApiKey::TxnOffsetCommit, 3, &r)?;
        for t in resp.topics {
            for p in t.partitions {
                check(
                    format!("txn commit {group} {topic}-{}", p.partition_index),
                    p.error_code,
                )?;
            }
        }
        Ok(())
    }

    /// OffsetCommit of a group with no members (generation −1), as an admin tool commits.
    ///
    /// # Errors
    /// Transport or the broker's error code.
    pub fn commit_offsets(
        &mut self,
        group: &str,
        topic: &str,
        offsets: &[(i32, i64, i32)],
    ) -> Result<(), ClientError> {
        let mut t = OffsetCommitRequestTopic::default();
        t.name = TopicName(sb(topic));
        t.partitions = offsets
            .iter()
            .map(|(p, o, e)| {
                let mut x = OffsetCommitRequestPartition::default();
                x.partition_index = *p;
                x.committed_offset = *o;
                x.committed_leader_epoch = *e;
                x
            })
            .collect();
        let mut r = OffsetCommitRequest::default();
        r.group_id = GroupId(sb(group));
        r.generation_id_or_member_epoch = -1;
        r.member_id = sb("");
        r.topics = vec![t];
        let resp: OffsetCommitResponse = self.call(ApiKey::OffsetCommit, 8, &r)?;
        for t in resp.topics {
            for p in t.partitions {
                check(
                    format!("commit {group} {topic}-{}", p.partition_index),
                    p.error_code,
                )?;
            }
        }
        Ok(())
    }

    /// OffsetFetch of a group for a topic's partitions: `(partition, offset)` (−1: none).
    ///
    /// # Errors
    /// Transport or the broker's error code.
    pub fn fetch_offsets(
        &mut self,
        group: &str,
        topic: &str,
        partitions: &[i32],
    ) -> Result<Vec<(i32, i64)>, ClientError> {
        let mut t = OffsetFetchRequestTopic::default();
        t.name = TopicName(sb(topic));
        t.partition_indexes = partitions.to_vec();
        let mut r = OffsetFetchRequest::default();
        r.group_id = GroupId(sb(group));
        r.topics = Some(vec![t]);
        let resp: OffsetFetchResponse = self.call(ApiKey::OffsetFetch, 7, &r)?;
        check(format!("fetch offsets of {group}"), resp.error_code)?;
        let mut out = vec![];
        for t in resp.topics {
            for p in t.partitions {
                check(
                    format!("offset of {group} {topic}-{}", p.partition_index),
                    p.error_code,
                )?;
                out.push((p.partition_index, p.committed_offset));
            }
        }
        Ok(out)
    }
}
