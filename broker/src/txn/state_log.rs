//! The bytes of `__transaction_state`: Kafka's transaction log records, plus one mirrorlog
//! record for producer-id blocks and the coordinator epoch.
//!
//! Every record is written alone in an uncompressed, non-transactional RecordBatch v2 with no
//! producer id, timestamped with the coordinator's clock (as Kafka's `TransactionStateManager`
//! writes them). Integers are big-endian. A transactional id lives in partition
//! `abs(javaHashCode(transactionalId)) % partitions` ([`partition_for`]).
//!
//! ## Transaction record (Kafka's `TransactionLogKey` v0 / `TransactionLogValue` v0–v1)
//!
//! ```text
//! key   int16  version = 0 (the coordinator record type TRANSACTION_LOG)
//!       int16  transactionalId length, then its UTF-8 bytes
//!
//! value (null = tombstone: the transactional id expired and is forgotten)
//!       int16  version: mirrorlog writes 0; reads 0 and 1
//!       int64  producerId
//!       int16  producerEpoch
//!       int32  transactionTimeoutMs
//!       int8   transactionStatus   0 Empty, 1 Ongoing, 2 PrepareCommit, 3 PrepareAbort,
//!                                  4 CompleteCommit, 5 CompleteAbort, 6 Dead,
//!                                  7 PrepareEpochFence
//!       array  transactionPartitions (nullable; null when Empty)
//!              v0: int32 count (−1 null); v1: unsigned varint count+1 (0 null)
//!              each: string topic   (v0 int16 length; v1 unsigned varint length+1)
//!                    array  int32 partitionIds (v0 int32 count; v1 unsigned varint count+1)
//!                    v1 only: tagged fields
//!       int64  transactionLastUpdateTimestampMs
//!       int64  transactionStartTimestampMs (−1 when no transaction started)
//!       v1 only: tagged fields — 0 PreviousProducerId int64, 1 NextProducerId int64,
//!                2 ClientTransactionVersion int16, 3 NextProducerEpoch int16 (only tag 0 is
//!                used; the rest are skipped)
//! ```
//!
//! ## mirrorlog broker record (partition 0 only)
//!
//! ```text
//! key   int16  version = 32767 (BROKER_STATE_KEY_VERSION: outside Kafka's record types, so
//!                               Kafka's loader skips it as an unknown key version)
//!       int16  length, then "mirrorlog"
//! value int16  version = 0
//!       int64  producerIdBlockEnd: every producer id below it may have been handed out
//!       int32  coordinatorEpoch: the epoch of the coordinator incarnation that wrote it
//! ```
//!
//! The last record of a key wins. Nothing here is checksummed beyond the batch CRC, and nothing
//! is rebuilt after a crash: the log is the state. Since mirrorlog has no log compaction, the
//! coordinator rewrites the live records of a partition and raises its log start offset past the
//! old ones once the partition has grown well beyond its live set (see `TxnCoordinator::tick`).

use super::state::{TxnMetadata, TxnState};
use bytes::Bytes;
use mirrorlog_index::{ProducerEpoch, ProducerId, TimestampMs, TopicPartition};
use mirrorlog_segment::BatchBuilder;
use std::collections::{BTreeMap, BTreeSet};

/// Kafka's transaction state topic.
pub const TRANSACTION_STATE_TOPIC: &str = "__transaction_state";
/// Kafka's group offsets topic (a transaction holds one of its partitions per group whose
/// offsets it commits).
pub const OFFSETS_TOPIC: &str = "__consumer_offsets";
/// `TransactionLogKey` version (the coordinator record type `TRANSACTION_LOG`).
pub const TXN_KEY_VERSION: i16 = 0;
/// The `TransactionLogValue` version mirrorlog writes.
pub const TXN_VALUE_VERSION: i16 = 0;
/// The key version of mirrorlog's broker record.
pub const BROKER_STATE_KEY_VERSION: i16 = i16::MAX;
/// The name in the broker record's key.
pub const BROKER_STATE_KEY_NAME: &str = "mirrorlog";
/// The broker record's value version.
pub const BROKER_STATE_VALUE_VERSION: i16 = 0;

/// Java's `String.hashCode()`: `h = 31·h + c` over the UTF-16 code units, wrapping.
pub fn java_string_hash(s: &str) -> i32 {
    s.encode_utf16()
        .fold(0i32, |h, c| h.wrapping_mul(31).wrapping_add(i32::from(c)))
}

/// The `__transaction_state` partition of a transactional id, as Kafka computes it:
/// `Utils.abs(transactionalId.hashCode) % partitions` (where `Utils.abs(Integer.MIN_VALUE)` is 0).
///
/// # Panics
/// If `partitions` is not positive.
pub fn partition_for(transactional_id: &str, partitions: i32) -> i32 {
    assert!(partitions > 0, "partition count must be positive");
    let h = java_string_hash(transactional_id);
    let abs = if h == i32::MIN { 0 } else { h.abs() };
    abs % partitions
}

/// mirrorlog's broker record: producer-id allocation and the coordinator epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BrokerState {
    /// Every producer id below this may have been handed out; the next block starts here.
    pub producer_id_block_end: i64,
    /// The coordinator epoch of the incarnation that wrote the record.
    pub coordinator_epoch: i32,
}

/// One decoded `__transaction_state` record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StateRecord {
    /// A transactional id's state, or `None` for its tombstone.
    Txn {
        /// The transactional id.
        transactional_id: String,
        /// Its metadata; `None` when the record is a tombstone.
        metadata: Option<TxnMetadata>,
    },
    /// mirrorlog's broker record.
    Broker(BrokerState),
    /// A key version this code does not know (skipped, as Kafka skips it).
    UnknownKey {
        /// The key's version.
        version: i16,
    },
    /// A transaction record whose value version this code does not know (skipped, as Kafka
    /// skips it).
    UnknownValue {
        /// The transactional id.
        transactional_id: String,
        /// The value's version.
        version: i16,
    },
}

/// A record that cannot be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("undecodable __transaction_state record: {0}")]
pub struct FormatError(pub String);

/// The key of a transactional id's record.
pub fn encode_txn_key(transactional_id: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(4 + transactional_id.len());
    out.extend_from_slice(&TXN_KEY_VERSION.to_be_bytes());
    put_string(&mut out, transactional_id);
    out
}

/// The value of a transactional id's record (`TransactionLogValue` v0). An `Empty` transaction
/// is written with null partitions, as Kafka writes it.
///
/// # Panics
/// If an `Empty` transaction holds partitions (Kafka's `IllegalStateException`).
pub fn encode_txn_value(m: &TxnMetadata) -> Vec<u8> {
    assert!(
        m.state != TxnState::Empty || m.partitions.is_empty(),
        "an Empty transaction holds no partitions: {m:?}"
    );
    let mut out = Vec::with_capacity(64);
    out.extend_from_slice(&TXN_VALUE_VERSION.to_be_bytes());
    out.extend_from_slice(&m.producer_id.get().to_be_bytes());
    out.extend_from_slice(&m.producer_epoch.get().to_be_bytes());
    out.extend_from_slice(&m.txn_timeout_ms.to_be_bytes());
    out.push(m.state.id() as u8);
    if m.state == TxnState::Empty {
        out.extend_from_slice(&(-1i32).to_be_bytes());
    } else {
        let by_topic = group_by_topic(&m.partitions);
        out.extend_from_slice(&(by_topic.len() as i32).to_be_bytes());
        for (topic, ids) in by_topic {
            put_string(&mut out, topic);
            out.extend_from_slice(&(ids.len() as i32).to_be_bytes());
            for id in ids {
                out.extend_from_slice(&id.to_be_bytes());
            }
        }
    }
    out.extend_from_slice(&m.txn_last_update_timestamp_ms.to_be_bytes());
    out.extend_from_slice(&m.txn_start_timestamp_ms.to_be_bytes());
    out
}

/// The key of the broker record.
pub fn encode_broker_key() -> Vec<u8> {
    let mut out = Vec::with_capacity(4 + BROKER_STATE_KEY_NAME.len());
    out.extend_from_slice(&BROKER_STATE_KEY_VERSION.to_be_bytes());
    put_string(&mut out, BROKER_STATE_KEY_NAME);
    out
}

/// The value of the broker record.
pub fn encode_broker_value(s: &BrokerState) -> Vec<u8> {
    let mut out = Vec::with_capacity(14);
    out.extend_from_slice(&BROKER_STATE_VALUE_VERSION.to_be_bytes());
    out.extend_from_slice(&s.producer_id_block_end.to_be_bytes());
    out.extend_from_slice(&s.coordinator_epoch.to_be_bytes());
    out
}

/// A one-record batch holding `key` and `value`, ready for a leader append.
pub fn record_batch(key: &[u8], value: Option<&[u8]>, now_ms: i64) -> Bytes {
    BatchBuilder::new()
        .record(TimestampMs(now_ms), Some(key), value)
        .build()
        .into_bytes()
}

/// The batch of a transactional id's record (`None`: its tombstone).
pub fn txn_record_batch(
    transactional_id: &str,
    metadata: Option<&TxnMetadata>,
    now_ms: i64,
) -> Bytes {
    let value = metadata.map(encode_txn_value);
    record_batch(&encode_txn_key(transactional_id), value.as_deref(), now_ms)
}

/// Decodes one record of `__transaction_state`.
///
/// # Errors
/// A key or value that is truncated, has trailing bytes, or holds an unknown transaction
/// status.
pub fn decode_record(key: &[u8], value: Option<&[u8]>) -> Result<StateRecord, FormatError> {
    let mut k = Reader::new(key);
    let version = k.i16()?;
    match version {
        TXN_KEY_VERSION => {
            let transactional_id = k.string()?;
            k.finish()?;
            let Some(value) = value else {
                return Ok(StateRecord::Txn {
                    transactional_id,
                    metadata: None,
                });
            };
            let mut v = Reader::new(value);
            let version = v.i16()?;
            match version {
                0 | 1 => {
                    let metadata = decode_txn_value(&mut v, version == 1)?;
                    v.finish()?;
                    Ok(StateRecord::Txn {
                        transactional_id,
                        metadata: Some(metadata),
                    })
                }
                _ => Ok(StateRecord::UnknownValue {
                    transactional_id,
                    version,
                }),
            }
        }
        BROKER_STATE_KEY_VERSION => {
            let name = k.string()?;
            k.finish()?;
            if name != BROKER_STATE_KEY_NAME {
                return Ok(StateRecord::UnknownKey { version });
            }
            let value = value.ok_or_else(|| FormatError("broker record without value".into()))?;
            let mut v = Reader::new(value);
            let vv = v.i16()?;
            if vv != BROKER_STATE_VALUE_VERSION {
                return Err(FormatError(format!("broker record value version {vv}")));
            }
            let s = BrokerState {
                producer_id_block_end: v.i64()?,
                coordinator_epoch: v.i32()?,
            };
            v.finish()?;
            Ok(StateRecord::Broker(s))
        }
        _ => Ok(StateRecord::UnknownKey { version }),
    }
}

fn decode_txn_value(v: &mut Reader<'_>, flexible: bool) -> Result<TxnMetadata, FormatError> {
    let producer_id = ProducerId(v.i64()?);
    let producer_epoch = ProducerEpoch(v.i16()?);
    let txn_timeout_ms = v.i32()?;
    let status = v.i8()?;
    let state = TxnState::from_id(status)
        .ok_or_else(|| FormatError(format!("unknown transaction status {status}")))?;
    let count = if flexible {
        v.uvarint()? as i64 - 1
    } else {
        i64::from(v.i32()?)
    };
    let mut partitions = BTreeSet::new();
    for _ in 0..count.max(0) {
        let topic = if flexible {
            v.compact_string()?
        } else {
            v.string()?
        };
        let n = if flexible {
            v.uvarint()? as i64 - 1
        } else {
            i64::from(v.i32()?)
        };
        if n < 0 {
            return Err(FormatError("null partition id array".into()));
        }
        for _ in 0..n {
            partitions.insert(TopicPartition {
                topic: topic.clone(),
                partition: v.i32()?,
            });
        }
        if flexible {
            v.skip_tagged_fields(|_, _| Ok(()))?;
        }
    }
    let txn_last_update_timestamp_ms = v.i64()?;
    let txn_start_timestamp_ms = v.i64()?;
    let mut last_producer_id = ProducerId::NONE;
    if flexible {
        v.skip_tagged_fields(|tag, data| {
            if tag == 0 {
                let b: [u8; 8] = data
                    .try_into()
                    .map_err(|_| FormatError("PreviousProducerId is not 8 bytes".into()))?;
                last_producer_id = ProducerId(i64::from_be_bytes(b));
            }
            Ok(())
        })?;
    }
    if state == TxnState::Empty {
        // Kafka ignores the partitions of an Empty transaction.
        partitions.clear();
    }
    Ok(TxnMetadata {
        producer_id,
        last_producer_id,
        producer_epoch,
        last_producer_epoch: ProducerEpoch::NONE,
        txn_timeout_ms,
        state,
        partitions,
        txn_start_timestamp_ms,
        txn_last_update_timestamp_ms,
    })
}

fn group_by_topic(partitions: &BTreeSet<TopicPartition>) -> BTreeMap<&str, Vec<i32>> {
    let mut m: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
    for tp in partitions {
        m.entry(tp.topic.as_str()).or_default().push(tp.partition);
    }
    m
}

fn put_string(out: &mut Vec<u8>, s: &str) {
    let len = i16::try_from(s.len()).expect("Kafka strings are at most 32767 bytes");
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(s.as_bytes());
}

/// A bounds-checked big-endian reader.
struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], FormatError> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|e| *e <= self.buf.len())
            .ok_or_else(|| {
                FormatError(format!(
                    "needs {n} bytes at {}, has {}",
                    self.pos,
                    self.buf.len() - self.pos
                ))
            })?;
        let s = &self.buf[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], FormatError> {
        Ok(self.take(N)?.try_into().expect("length checked"))
    }

    fn i8(&mut self) -> Result<i8, FormatError> {
        Ok(i8::from_be_bytes(self.array()?))
    }
    fn i16(&mut self) -> Result<i16, FormatError> {
        Ok(i16::from_be_bytes(self.array()?))
    }
    fn i32(&mut self) -> Result<i32, FormatError> {
        Ok(i32::from_be_bytes(self.array()?))
    }
    fn i64(&mut self) -> Result<i64, FormatError> {
        Ok(i64::from_be_bytes(self.array()?))
    }

    fn utf8(&mut self, len: usize) -> Result<String, FormatError> {
        let b = self.take(len)?;
        String::from_utf8(b.to_vec()).map_err(|e| FormatError(format!("string is not UTF-8: {e}")))
    }

    fn string(&mut self) -> Result<String, FormatError> {
        let len = self.i16()?;
        if len < 0 {
            return Err(FormatError("null string".into()));
        }
        self.utf8(len as usize)
    }

    fn compact_string(&mut self) -> Result<String, FormatError> {
        let len = self.uvarint()?;
        if len == 0 {
            return Err(FormatError("null compact string".into()));
        }
        self.utf8(len as usize - 1)
    }

    fn uvarint(&mut self) -> Result<u32, FormatError> {
        let mut v: u32 = 0;
        for i in 0..5 {
            let b = self.array::<1>()?[0];
            v |= u32::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(FormatError("unsigned varint longer than 5 bytes".into()))
    }

    fn skip_tagged_fields(
        &mut self,
        mut f: impl FnMut(u32, &[u8]) -> Result<(), FormatError>,
    ) -> Result<(), FormatError> {
        let n = self.uvarint()?;
        for _ in 0..n {
            let tag = self.uvarint()?;
            let size = self.uvarint()? as usize;
            let data = self.take(size)?;
            f(tag, data)?;
        }
        Ok(())
    }

    fn finish(&self) -> Result<(), FormatError> {
        if self.pos == self.buf.len() {
            Ok(())
        } else {
            Err(FormatError(format!(
                "{} trailing bytes",
                self.buf.len() - self.pos
            )))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tp(t: &str, p: i32) -> TopicPartition {
        TopicPartition {
            topic: t.into(),
            partition: p,
        }
    }

    fn ongoing() -> TxnMetadata {
        TxnMetadata {
            producer_id: ProducerId(4242),
            last_producer_id: ProducerId::NONE,
            producer_epoch: ProducerEpoch(7),
            last_producer_epoch: ProducerEpoch::NONE,
            txn_timeout_ms: 60_000,
            state: TxnState::Ongoing,
            partitions: [tp("orders", 1), tp("orders", 0), tp("audit", 3)]
                .into_iter()
                .collect(),
            txn_start_timestamp_ms: 1_000,
            txn_last_update_timestamp_ms: 2_000,
        }
    }

    #[test]
    fn java_hash_matches_java() {
        // `String.hashCode()` values (the JVM's definition, computed independently).
        assert_eq!(java_string_hash(""), 0);
        assert_eq!(java_string_hash("hello"), 99_162_322);
        assert_eq!(java_string_hash("my-transactional-id"), -959_806_496);
        // UTF-16 code units, not bytes or chars: U+1F600 is a surrogate pair.
        assert_eq!(java_string_hash("é"), 233);
        assert_eq!(java_string_hash("😀"), 1_772_899);
    }

    #[test]
    fn partition_for_takes_kafka_abs_then_modulo() {
        assert_eq!(partition_for("hello", 50), 99_162_322 % 50);
        assert_eq!(partition_for("my-transactional-id", 50), 959_806_496 % 50);
        // "polygenelubricants" hashes to Integer.MIN_VALUE: Utils.abs makes it 0.
        assert_eq!(java_string_hash("polygenelubricants"), i32::MIN);
        assert_eq!(partition_for("polygenelubricants", 7), 0);
    }

    #[test]
    fn txn_value_v0_has_kafka_layout() {
        let mut m = ongoing();
        m.partitions = [tp("t", 2)].into_iter().collect();
        let v = encode_txn_value(&m);
        let mut want = vec![];
        want.extend_from_slice(&0i16.to_be_bytes());
        want.extend_from_slice(&4242i64.to_be_bytes());
        want.extend_from_slice(&7i16.to_be_bytes());
        want.extend_from_slice(&60_000i32.to_be_bytes());
        want.push(1);
        want.extend_from_slice(&1i32.to_be_bytes());
        want.extend_from_slice(&1i16.to_be_bytes());
        want.push(b't');
        want.extend_from_slice(&1i32.to_be_bytes());
        want.extend_from_slice(&2i32.to_be_bytes());
        want.extend_from_slice(&2_000i64.to_be_bytes());
        want.extend_from_slice(&1_000i64.to_be_bytes());
        assert_eq!(v, want);
        assert_eq!(encode_txn_key("ab"), vec![0, 0, 0, 2, b'a', b'b']);
    }

    #[test]
    fn txn_records_round_trip() {
        let m = ongoing();
        let key = encode_txn_key("tx-1");
        let value = encode_txn_value(&m);
        assert_eq!(
            decode_record(&key, Some(&value)).unwrap(),
            StateRecord::Txn {
                transactional_id: "tx-1".into(),
                metadata: Some(m)
            }
        );
        assert_eq!(
            decode_record(&key, None).unwrap(),
            StateRecord::Txn {
                transactional_id: "tx-1".into(),
                metadata: None
            }
        );
    }

    #[test]
    fn empty_state_is_written_with_null_partitions() {
        let mut m = ongoing();
        m.state = TxnState::Empty;
        m.partitions.clear();
        let v = encode_txn_value(&m);
        // version, pid, epoch, timeout, status, then the null array.
        assert_eq!(&v[17..21], &(-1i32).to_be_bytes());
        let StateRecord::Txn { metadata, .. } =
            decode_record(&encode_txn_key("x"), Some(&v)).unwrap()
        else {
            panic!("a txn record")
        };
        assert_eq!(metadata.unwrap(), m);
    }

    #[test]
    fn flexible_v1_values_are_read_with_their_tagged_fields() {
        let mut v = vec![];
        v.extend_from_slice(&1i16.to_be_bytes());
        v.extend_from_slice(&99i64.to_be_bytes());
        v.extend_from_slice(&3i16.to_be_bytes());
        v.extend_from_slice(&10_000i32.to_be_bytes());
        v.push(2); // PrepareCommit
        v.push(2); // one topic (count + 1)
        v.push(4); // "abc" (length + 1)
        v.extend_from_slice(b"abc");
        v.push(3); // two partition ids
        v.extend_from_slice(&5i32.to_be_bytes());
        v.extend_from_slice(&6i32.to_be_bytes());
        v.push(0); // topic tagged fields
        v.extend_from_slice(&20i64.to_be_bytes());
        v.extend_from_slice(&10i64.to_be_bytes());
        v.push(2); // two tagged fields
        v.push(0); // PreviousProducerId
        v.push(8);
        v.extend_from_slice(&77i64.to_be_bytes());
        v.push(2); // ClientTransactionVersion
        v.push(2);
        v.extend_from_slice(&2i16.to_be_bytes());
        let StateRecord::Txn { metadata, .. } =
            decode_record(&encode_txn_key("x"), Some(&v)).unwrap()
        else {
            panic!("a txn record")
        };
        let m = metadata.unwrap();
        assert_eq!(m.producer_id, ProducerId(99));
        assert_eq!(m.last_producer_id, ProducerId(77));
        assert_eq!(m.state, TxnState::PrepareCommit);
        assert_eq!(
            m.partitions,
            [tp("abc", 5), tp("abc", 6)].into_iter().collect()
        );
        assert_eq!(m.txn_last_update_timestamp_ms, 20);
        assert_eq!(m.txn_start_timestamp_ms, 10);
    }

    #[test]
    fn broker_record_round_trips_and_unknown_keys_are_skipped() {
        let s = BrokerState {
            producer_id_block_end: 5_000,
            coordinator_epoch: 3,
        };
        assert_eq!(
            decode_record(&encode_broker_key(), Some(&encode_broker_value(&s))).unwrap(),
            StateRecord::Broker(s)
        );
        assert_eq!(
            decode_record(&[0, 9, 1, 2], Some(&[1])).unwrap(),
            StateRecord::UnknownKey { version: 9 }
        );
        let mut unknown_value = vec![0, 5];
        unknown_value.extend_from_slice(&[1, 2, 3]);
        assert_eq!(
            decode_record(&encode_txn_key("x"), Some(&unknown_value)).unwrap(),
            StateRecord::UnknownValue {
                transactional_id: "x".into(),
                version: 5
            }
        );
    }

    #[test]
    fn truncated_and_padded_records_are_errors() {
        let v = encode_txn_value(&ongoing());
        let key = encode_txn_key("x");
        assert!(decode_record(&key, Some(&v[..v.len() - 1])).is_err());
        let mut padded = v.clone();
        padded.push(0);
        assert!(decode_record(&key, Some(&padded)).is_err());
        let mut bad_status = v;
        bad_status[16] = 42;
        assert!(decode_record(&key, Some(&bad_status)).is_err());
    }
}
