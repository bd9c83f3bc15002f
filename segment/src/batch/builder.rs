//! Building batches the way Kafka's `MemoryRecordsBuilder` builds them: baseTimestamp is the
//! first record's timestamp, maxTimestamp the largest (or the append time for LogAppendTime),
//! offsets and timestamps stored as deltas, the records area compressed as one stream, and the
//! CRC computed last.

use super::compression::compress;
use super::control::{ControlRecordType, EndTxnMarker, MirrorPidReset};
use super::varint::{size_of_varint, write_varint, write_varlong};
use super::{Compression, TimestampType};
use super::{LOG_OVERHEAD, MAGIC_V2, RECORD_BATCH_OVERHEAD, RecordBatch, attr, compute_crc, field};
use bytes::Bytes;
use mirrorlog_index::{LeaderEpoch, Offset, ProducerEpoch, ProducerId, Sequence, TimestampMs};

/// Builds one RecordBatch v2.
#[derive(Debug, Clone)]
pub struct BatchBuilder {
    base_offset: Offset,
    partition_leader_epoch: LeaderEpoch,
    compression: Compression,
    log_append_time: Option<TimestampMs>,
    transactional: bool,
    control: bool,
    producer_id: ProducerId,
    producer_epoch: ProducerEpoch,
    base_sequence: Sequence,
    records: Vec<u8>,
    count: i32,
    last_offset_delta: Option<i32>,
    base_timestamp: Option<i64>,
    max_timestamp: i64,
}

impl Default for BatchBuilder {
    fn default() -> Self {
        BatchBuilder::new()
    }
}

impl BatchBuilder {
    /// An empty, uncompressed, CreateTime batch at offset 0 with no producer and no leader epoch.
    pub fn new() -> BatchBuilder {
        BatchBuilder {
            base_offset: Offset(0),
            partition_leader_epoch: LeaderEpoch::NONE,
            compression: Compression::None,
            log_append_time: None,
            transactional: false,
            control: false,
            producer_id: ProducerId::NONE,
            producer_epoch: ProducerEpoch::NONE,
            base_sequence: Sequence::NONE,
            records: Vec::new(),
            count: 0,
            last_offset_delta: None,
            base_timestamp: None,
            max_timestamp: -1,
        }
    }

    /// Sets the codec.
    pub fn compression(mut self, c: Compression) -> Self {
        self.compression = c;
        self
    }
    /// Sets the base offset (records added by [`append`](Self::append) follow it).
    pub fn base_offset(mut self, o: Offset) -> Self {
        self.base_offset = o;
        self
    }
    /// Sets the partition leader epoch.
    pub fn partition_leader_epoch(mut self, e: LeaderEpoch) -> Self {
        self.partition_leader_epoch = e;
        self
    }
    /// Makes the batch idempotent: producer id, epoch and the first record's sequence.
    pub fn producer(
        mut self,
        id: ProducerId,
        epoch: ProducerEpoch,
        base_sequence: Sequence,
    ) -> Self {
        self.producer_id = id;
        self.producer_epoch = epoch;
        self.base_sequence = base_sequence;
        self
    }
    /// Sets the transactional bit.
    pub fn transactional(mut self, t: bool) -> Self {
        self.transactional = t;
        self
    }
    /// Makes it a LogAppendTime batch whose maxTimestamp is `ts`.
    pub fn log_append_time(mut self, ts: TimestampMs) -> Self {
        self.log_append_time = Some(ts);
        self
    }

    /// CreateTime, or LogAppendTime when [`log_append_time`](Self::log_append_time) was set.
    pub fn timestamp_type(&self) -> TimestampType {
        if self.log_append_time.is_some() {
            TimestampType::LogAppendTime
        } else {
            TimestampType::CreateTime
        }
    }

    /// Appends a record at the next offset (base + count).
    pub fn append(
        &mut self,
        timestamp: TimestampMs,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
        headers: &[(&[u8], Option<&[u8]>)],
    ) -> &mut Self {
        let delta = self.last_offset_delta.map_or(0, |d| d + 1);
        self.append_with_delta(delta, timestamp, key, value, headers)
    }

    /// Appends a record at `offset`, which must be above every offset appended so far (gaps are
    /// allowed, as after compaction).
    pub fn append_at(
        &mut self,
        offset: Offset,
        timestamp: TimestampMs,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
        headers: &[(&[u8], Option<&[u8]>)],
    ) -> &mut Self {
        let delta = offset
            .relative_to(self.base_offset)
            .expect("record offset must be within i32 of the base offset")
            .get();
        assert!(
            self.last_offset_delta.is_none_or(|d| delta > d),
            "record offsets must increase: {offset} after delta {:?}",
            self.last_offset_delta
        );
        self.append_with_delta(delta, timestamp, key, value, headers)
    }

    /// Convenience for tests and tools: one record with no headers.
    pub fn record(
        mut self,
        timestamp: TimestampMs,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
    ) -> Self {
        self.append(timestamp, key, value, &[]);
        self
    }

    fn append_with_delta(
        &mut self,
        offset_delta: i32,
        timestamp: TimestampMs,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
        headers: &[(&[u8], Option<&[u8]>)],
    ) -> &mut Self {
        let ts = timestamp.get();
        let base_ts = *self.base_timestamp.get_or_insert(ts);
        self.max_timestamp = self.max_timestamp.max(ts);
        let mut body =
            Vec::with_capacity(16 + key.map_or(0, <[u8]>::len) + value.map_or(0, <[u8]>::len));
        body.push(0); // attributes
        // Wrapping: client bytes may put the base near i64::MAX (the encoding wraps the same).
        write_varlong(&mut body, ts.wrapping_sub(base_ts));
        write_varint(&mut body, offset_delta);
        write_nullable(&mut body, key);
        write_nullable(&mut body, value);
        write_varint(&mut body, headers.len() as i32);
        for (k, v) in headers {
            write_nullable(&mut body, Some(k));
            write_nullable(&mut body, *v);
        }
        self.records
            .reserve(size_of_varint(body.len() as i32) + body.len());
        write_varint(&mut self.records, body.len() as i32);
        self.records.extend_from_slice(&body);
        self.count += 1;
        self.last_offset_delta = Some(offset_delta);
        self
    }

    /// A control batch with one record of `kind` and `value` (compression none, as Kafka).
    pub fn control(kind: ControlRecordType, value: &[u8], timestamp: TimestampMs) -> BatchBuilder {
        let mut b = BatchBuilder::new();
        b.control = true;
        b.append(timestamp, Some(&kind.key()), Some(value), &[]);
        b
    }

    /// An ABORT or COMMIT marker as Kafka's `writeEndTransactionalMarker` writes it: the
    /// transaction's producer id and epoch, sequence −1, transactional and control bits set.
    pub fn end_txn_marker(
        producer_id: ProducerId,
        producer_epoch: ProducerEpoch,
        commit: bool,
        coordinator_epoch: i32,
        timestamp: TimestampMs,
    ) -> BatchBuilder {
        let kind = if commit {
            ControlRecordType::Commit
        } else {
            ControlRecordType::Abort
        };
        let value = EndTxnMarker {
            version: 0,
            coordinator_epoch,
        }
        .encode();
        BatchBuilder::control(kind, &value, timestamp)
            .producer(producer_id, producer_epoch, Sequence::NONE)
            .transactional(true)
    }

    /// KIP-1279's MIRROR_PID_RESET barrier: a non-transactional control batch with no producer.
    pub fn mirror_pid_reset(
        source_cluster_id: Option<&str>,
        timestamp: TimestampMs,
    ) -> BatchBuilder {
        let value = MirrorPidReset {
            version: 0,
            source_cluster_id: source_cluster_id.map(String::from),
        }
        .encode();
        BatchBuilder::control(ControlRecordType::MirrorPidReset, &value, timestamp)
    }

    /// Appends the finished batch's bytes to `out`.
    pub fn build_into(&self, out: &mut Vec<u8>) {
        let area;
        let records: &[u8] = if self.compression == Compression::None {
            &self.records
        } else {
            area = compress(self.compression, &self.records);
            &area
        };
        let start = out.len();
        let size = RECORD_BATCH_OVERHEAD + records.len();
        out.reserve(size);
        let mut attributes = self.compression.id() as i16;
        let max_timestamp = match self.log_append_time {
            Some(t) => {
                attributes |= attr::TIMESTAMP_TYPE;
                t.get()
            }
            None => self.max_timestamp,
        };
        if self.transactional {
            attributes |= attr::TRANSACTIONAL;
        }
        if self.control {
            attributes |= attr::CONTROL;
        }
        out.extend_from_slice(&self.base_offset.get().to_be_bytes());
        out.extend_from_slice(&((size - LOG_OVERHEAD) as i32).to_be_bytes());
        out.extend_from_slice(&self.partition_leader_epoch.get().to_be_bytes());
        out.push(MAGIC_V2 as u8);
        out.extend_from_slice(&[0; 4]); // crc, filled below
        out.extend_from_slice(&attributes.to_be_bytes());
        out.extend_from_slice(&self.last_offset_delta.unwrap_or(0).to_be_bytes());
        out.extend_from_slice(&self.base_timestamp.unwrap_or(-1).to_be_bytes());
        out.extend_from_slice(&max_timestamp.to_be_bytes());
        out.extend_from_slice(&self.producer_id.get().to_be_bytes());
        out.extend_from_slice(&self.producer_epoch.get().to_be_bytes());
        out.extend_from_slice(&self.base_sequence.get().to_be_bytes());
        out.extend_from_slice(&self.count.to_be_bytes());
        out.extend_from_slice(records);
        let crc = compute_crc(&out[start..]);
        out[start + field::CRC..start + field::CRC + 4].copy_from_slice(&crc.to_be_bytes());
    }

    /// The finished batch.
    pub fn build(&self) -> RecordBatch {
        let mut out = Vec::new();
        self.build_into(&mut out);
        let batch = RecordBatch::new(Bytes::from(out)).expect("the builder writes whole batches");
        debug_assert_eq!(batch.validate(), Ok(()));
        batch
    }
}

fn write_nullable(out: &mut Vec<u8>, b: Option<&[u8]>) {
    match b {
        None => write_varint(out, -1),
        Some(b) => {
            write_varint(out, b.len() as i32);
            out.extend_from_slice(b);
        }
    }
}
