//! The records of `__consumer_offsets`, byte-compatible with Kafka's (`OffsetCommitKey.json`,
//! `OffsetCommitValue.json`, `GroupMetadataKey.json`, `GroupMetadataValue.json` in Kafka's
//! `group-coordinator` module), so Kafka's tools read our offsets topic and we read theirs.
//!
//! Every record of the topic has a key and, except for a tombstone, a value. The key starts with
//! an `int16` that names the record type (Kafka calls it the key version); the value starts with
//! an `int16` value version. Non-flexible versions use Kafka's classic encodings: `string` =
//! `int16` length + UTF-8 bytes, `nullable string` = length −1 for null, `bytes` = `int32`
//! length + bytes, arrays = `int32` count + elements, integers big-endian. Flexible versions
//! (value version 4, never written by us, read for compatibility) use compact forms (unsigned
//! varint length + 1, 0 for null) and end each struct with a tagged-field section.
//!
//! ```text
//! OffsetCommitKey (type 0 or 1; we write 1)       GroupMetadataKey (type 2)
//! +--------+-------------+-------------+--------+  +--------+-------------+
//! | i16 1  | group  str  | topic  str  | i32 p  |  | i16 2  | group  str  |
//! +--------+-------------+-------------+--------+  +--------+-------------+
//!
//! OffsetCommitValue v3 (written)                    v1 (written when the commit asked for a
//! +-------+------------+-----------+----------+---------+   retention time, OffsetCommit v2–v4)
//! | i16 3 | i64 offset | i32 epoch | meta str | i64 ts  |   | i16 1 | i64 offset | meta str |
//! +-------+------------+-----------+----------+---------+   | i64 commit ts | i64 expire ts |
//! (v0, v2: no epoch; v1 adds expireTimestamp; v4: compact + tagged fields)
//!
//! GroupMetadataValue v3 (written)
//! +-------+-------------------+----------------+--------------------+------------------+
//! | i16 3 | protocolType str  | generation i32 | protocol str|null  | leader str|null  |
//! +-------+-------------------+----------------+--------------------+------------------+
//! | currentStateTimestamp i64 | members: i32 count, then per member:                    |
//! |   memberId str, groupInstanceId str|null, clientId str, clientHost str,             |
//! |   rebalanceTimeout i32, sessionTimeout i32, subscription bytes, assignment bytes    |
//! +-------------------------------------------------------------------------------------+
//! (v0: no rebalanceTimeout, currentStateTimestamp, groupInstanceId; v1 adds
//!  rebalanceTimeout; v2 adds currentStateTimestamp; v3 adds groupInstanceId)
//! ```
//!
//! A tombstone (null value) deletes: an offset tombstone the committed offset of its group
//! partition (and any transactional offset staged for it), a group tombstone the group.
//! Transactional offset commits are ordinary offset records in a transactional batch of the
//! committing producer; they count only once a COMMIT marker of that producer follows in the same
//! partition (an ABORT marker drops them).
//!
//! Nothing here is checksummed beyond the batch CRC: records are read back through the engine,
//! which validates every batch; a record that does not parse is skipped with a warning at load.

use bytes::Bytes;

/// Key type of an offset commit written by Kafka before 0.10 (same layout as type 1).
pub const OFFSET_COMMIT_KEY_V0: i16 = 0;
/// Key type of an offset commit.
pub const OFFSET_COMMIT_KEY: i16 = 1;
/// Key type of a group's metadata.
pub const GROUP_METADATA_KEY: i16 = 2;
/// The offset commit value version written (no expire timestamp).
pub const OFFSET_COMMIT_VALUE_VERSION: i16 = 3;
/// The offset commit value version written when the commit carries an expire timestamp.
pub const OFFSET_COMMIT_VALUE_VERSION_EXPIRING: i16 = 1;
/// The group metadata value version written.
pub const GROUP_METADATA_VALUE_VERSION: i16 = 3;

/// A record that cannot be encoded or decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct RecordError(pub String);

/// A decoded record key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecordKey {
    /// An offset commit of a group partition.
    Offset {
        /// The group.
        group: String,
        /// The topic.
        topic: String,
        /// The partition.
        partition: i32,
    },
    /// A group's metadata.
    GroupMetadata {
        /// The group.
        group: String,
    },
    /// A record type of Kafka's newer coordinators (consumer, share, streams groups), which
    /// the classic coordinator skips.
    Other(i16),
}

/// A committed offset as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetValue {
    /// The committed offset.
    pub offset: i64,
    /// The leader epoch of the record before the offset, −1 when unknown.
    pub leader_epoch: i32,
    /// The client's metadata string.
    pub metadata: String,
    /// When the commit was made.
    pub commit_timestamp_ms: i64,
    /// Explicit expiry (OffsetCommit v2–v4 with a retention time), else none.
    pub expire_timestamp_ms: Option<i64>,
}

/// One member in a group's metadata value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberValue {
    /// The member id.
    pub member_id: String,
    /// The static member's instance id.
    pub group_instance_id: Option<String>,
    /// The client id.
    pub client_id: String,
    /// The client host (`/<address>` as Kafka prints it).
    pub client_host: String,
    /// The rebalance timeout (−1 when read from a version 0 value).
    pub rebalance_timeout_ms: i32,
    /// The session timeout.
    pub session_timeout_ms: i32,
    /// The member's metadata for the group's protocol.
    pub subscription: Bytes,
    /// The member's assignment.
    pub assignment: Bytes,
}

/// A group's metadata as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupValue {
    /// The protocol type ("" for none).
    pub protocol_type: String,
    /// The generation.
    pub generation: i32,
    /// The selected protocol.
    pub protocol: Option<String>,
    /// The leader's member id.
    pub leader: Option<String>,
    /// When the group entered its state, −1 when unknown.
    pub current_state_timestamp_ms: i64,
    /// The members.
    pub members: Vec<MemberValue>,
}

/// An offset commit key (type 1).
///
/// # Errors
/// A string longer than an `int16` length allows.
pub fn offset_key(group: &str, topic: &str, partition: i32) -> Result<Bytes, RecordError> {
    let mut w = Writer::default();
    w.i16(OFFSET_COMMIT_KEY);
    w.string(group)?;
    w.string(topic)?;
    w.i32(partition);
    Ok(w.finish())
}

/// A group metadata key (type 2).
///
/// # Errors
/// A group id longer than an `int16` length allows.
pub fn group_key(group: &str) -> Result<Bytes, RecordError> {
    let mut w = Writer::default();
    w.i16(GROUP_METADATA_KEY);
    w.string(group)?;
    Ok(w.finish())
}

/// An offset commit value: version 3, or version 1 when it carries an expire timestamp.
///
/// # Errors
/// Metadata longer than an `int16` length allows.
pub fn offset_value(v: &OffsetValue) -> Result<Bytes, RecordError> {
    let mut w = Writer::default();
    match v.expire_timestamp_ms {
        None => {
            w.i16(OFFSET_COMMIT_VALUE_VERSION);
            w.i64(v.offset);
            w.i32(v.leader_epoch);
            w.string(&v.metadata)?;
            w.i64(v.commit_timestamp_ms);
        }
        Some(expire) => {
            w.i16(OFFSET_COMMIT_VALUE_VERSION_EXPIRING);
            w.i64(v.offset);
            w.string(&v.metadata)?;
            w.i64(v.commit_timestamp_ms);
            w.i64(expire);
        }
    }
    Ok(w.finish())
}

/// A group metadata value, version 3.
///
/// # Errors
/// A string longer than an `int16` length allows.
pub fn group_value(v: &GroupValue) -> Result<Bytes, RecordError> {
    let mut w = Writer::default();
    w.i16(GROUP_METADATA_VALUE_VERSION);
    w.string(&v.protocol_type)?;
    w.i32(v.generation);
    w.nullable_string(v.protocol.as_deref())?;
    w.nullable_string(v.leader.as_deref())?;
    w.i64(v.current_state_timestamp_ms);
    w.i32(i32::try_from(v.members.len()).map_err(|_| RecordError("too many members".into()))?);
    for m in &v.members {
        w.string(&m.member_id)?;
        w.nullable_string(m.group_instance_id.as_deref())?;
        w.string(&m.client_id)?;
        w.string(&m.client_host)?;
        w.i32(m.rebalance_timeout_ms);
        w.i32(m.session_timeout_ms);
        w.bytes(&m.subscription)?;
        w.bytes(&m.assignment)?;
    }
    Ok(w.finish())
}

/// Decodes a key.
///
/// # Errors
/// A key that is cut short or holds invalid UTF-8.
pub fn decode_key(b: &[u8]) -> Result<RecordKey, RecordError> {
    let mut r = Reader::new(b, false);
    let kind = r.i16()?;
    Ok(match kind {
        OFFSET_COMMIT_KEY_V0 | OFFSET_COMMIT_KEY => RecordKey::Offset {
            group: r.string()?,
            topic: r.string()?,
            partition: r.i32()?,
        },
        GROUP_METADATA_KEY => RecordKey::GroupMetadata { group: r.string()? },
        other => RecordKey::Other(other),
    })
}

/// Decodes an offset commit value of any version Kafka has written (0–4).
///
/// # Errors
/// An unknown version or a value cut short.
pub fn decode_offset_value(b: &[u8]) -> Result<OffsetValue, RecordError> {
    let mut r = Reader::new(b, false);
    let version = r.i16()?;
    if !(0..=4).contains(&version) {
        return Err(RecordError(format!(
            "unknown offset commit value version {version}"
        )));
    }
    r.flexible = version >= 4;
    let offset = r.i64()?;
    let leader_epoch = if version >= 3 { r.i32()? } else { -1 };
    let metadata = r.string()?;
    let commit_timestamp_ms = r.i64()?;
    let expire_timestamp_ms = if version == 1 {
        Some(r.i64()?).filter(|t| *t != -1)
    } else {
        None
    };
    r.tagged_fields()?;
    Ok(OffsetValue {
        offset,
        leader_epoch,
        metadata,
        commit_timestamp_ms,
        expire_timestamp_ms,
    })
}

/// Decodes a group metadata value of any version Kafka has written (0–4).
///
/// # Errors
/// An unknown version or a value cut short.
pub fn decode_group_value(b: &[u8]) -> Result<GroupValue, RecordError> {
    let mut r = Reader::new(b, false);
    let version = r.i16()?;
    if !(0..=4).contains(&version) {
        return Err(RecordError(format!(
            "unknown group metadata value version {version}"
        )));
    }
    r.flexible = version >= 4;
    let protocol_type = r.string()?;
    let generation = r.i32()?;
    let protocol = r.nullable_string()?;
    let leader = r.nullable_string()?;
    let current_state_timestamp_ms = if version >= 2 { r.i64()? } else { -1 };
    let n = r.array_len()?;
    let mut members = Vec::with_capacity(n.min(1024));
    for _ in 0..n {
        let member_id = r.string()?;
        let group_instance_id = if version >= 3 {
            r.nullable_string()?
        } else {
            None
        };
        let client_id = r.string()?;
        let client_host = r.string()?;
        let rebalance_timeout_ms = if version >= 1 { r.i32()? } else { -1 };
        let session_timeout_ms = r.i32()?;
        let subscription = r.bytes()?;
        let assignment = r.bytes()?;
        r.tagged_fields()?;
        members.push(MemberValue {
            member_id,
            group_instance_id,
            client_id,
            client_host,
            rebalance_timeout_ms,
            session_timeout_ms,
            subscription,
            assignment,
        });
    }
    r.tagged_fields()?;
    Ok(GroupValue {
        protocol_type,
        generation,
        protocol,
        leader,
        current_state_timestamp_ms,
        members,
    })
}

/// The topics of a `consumer` protocol subscription: its version 0 prefix (`int16` version,
/// then an array of topic strings), which every later version starts with, as Kafka reads it.
pub fn consumer_subscription_topics(b: &[u8]) -> Option<Vec<String>> {
    let mut r = Reader::new(b, false);
    let _version = r.i16().ok()?;
    let n = r.array_len().ok()?;
    let mut topics = Vec::with_capacity(n.min(1024));
    for _ in 0..n {
        topics.push(r.string().ok()?);
    }
    Some(topics)
}

#[derive(Default)]
struct Writer(Vec<u8>);

impl Writer {
    fn i16(&mut self, v: i16) {
        self.0.extend_from_slice(&v.to_be_bytes());
    }
    fn i32(&mut self, v: i32) {
        self.0.extend_from_slice(&v.to_be_bytes());
    }
    fn i64(&mut self, v: i64) {
        self.0.extend_from_slice(&v.to_be_bytes());
    }
    fn string(&mut self, s: &str) -> Result<(), RecordError> {
        let len = i16::try_from(s.len()).map_err(|_| {
            RecordError(format!(
                "a string of {} bytes does not fit an int16 length",
                s.len()
            ))
        })?;
        self.i16(len);
        self.0.extend_from_slice(s.as_bytes());
        Ok(())
    }
    fn nullable_string(&mut self, s: Option<&str>) -> Result<(), RecordError> {
        match s {
            None => {
                self.i16(-1);
                Ok(())
            }
            Some(s) => self.string(s),
        }
    }
    fn bytes(&mut self, b: &[u8]) -> Result<(), RecordError> {
        let len = i32::try_from(b.len())
            .map_err(|_| RecordError(format!("{} bytes do not fit an int32 length", b.len())))?;
        self.i32(len);
        self.0.extend_from_slice(b);
        Ok(())
    }
    fn finish(self) -> Bytes {
        Bytes::from(self.0)
    }
}

struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    flexible: bool,
}

impl<'a> Reader<'a> {
    fn new(buf: &'a [u8], flexible: bool) -> Self {
        Reader {
            buf,
            pos: 0,
            flexible,
        }
    }
    fn take(&mut self, n: usize) -> Result<&'a [u8], RecordError> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|e| *e <= self.buf.len())
            .ok_or_else(|| {
                RecordError(format!(
                    "record cut short: {n} bytes wanted at {} of {}",
                    self.pos,
                    self.buf.len()
                ))
            })?;
        let s = &self.buf[self.pos..end];
        self.pos = end;
        Ok(s)
    }
    fn i16(&mut self) -> Result<i16, RecordError> {
        Ok(i16::from_be_bytes(self.take(2)?.try_into().expect("2")))
    }
    fn i32(&mut self) -> Result<i32, RecordError> {
        Ok(i32::from_be_bytes(self.take(4)?.try_into().expect("4")))
    }
    fn i64(&mut self) -> Result<i64, RecordError> {
        Ok(i64::from_be_bytes(self.take(8)?.try_into().expect("8")))
    }
    fn uvarint(&mut self) -> Result<u64, RecordError> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.take(1)?[0];
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(RecordError("varint longer than 10 bytes".into()))
    }
    /// The length of a nullable string, bytes or array: `None` for null.
    fn len(&mut self, wide: bool) -> Result<Option<usize>, RecordError> {
        if self.flexible {
            let n = self.uvarint()?;
            return Ok(n.checked_sub(1).map(|n| n as usize));
        }
        let n = if wide {
            i64::from(self.i32()?)
        } else {
            i64::from(self.i16()?)
        };
        Ok(usize::try_from(n).ok())
    }
    fn nullable_string(&mut self) -> Result<Option<String>, RecordError> {
        let Some(n) = self.len(false)? else {
            return Ok(None);
        };
        let b = self.take(n)?;
        String::from_utf8(b.to_vec())
            .map(Some)
            .map_err(|_| RecordError("string is not UTF-8".into()))
    }
    fn string(&mut self) -> Result<String, RecordError> {
        self.nullable_string()?
            .ok_or_else(|| RecordError("null in a non-nullable string".into()))
    }
    fn bytes(&mut self) -> Result<Bytes, RecordError> {
        let n = self.len(true)?.unwrap_or(0);
        Ok(Bytes::copy_from_slice(self.take(n)?))
    }
    fn array_len(&mut self) -> Result<usize, RecordError> {
        let n = self.len(true)?.unwrap_or(0);
        if n > self.buf.len() - self.pos {
            return Err(RecordError(format!(
                "array of {n} elements runs past the record"
            )));
        }
        Ok(n)
    }
    fn tagged_fields(&mut self) -> Result<(), RecordError> {
        if !self.flexible {
            return Ok(());
        }
        let n = self.uvarint()?;
        for _ in 0..n {
            let _tag = self.uvarint()?;
            let size = self.uvarint()? as usize;
            self.take(size)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offset_key_has_kafkas_layout() {
        let k = offset_key("g", "t", 7).unwrap();
        assert_eq!(
            &k[..],
            &[0, 1, 0, 1, b'g', 0, 1, b't', 0, 0, 0, 7],
            "type 1, group, topic, partition"
        );
        assert_eq!(
            decode_key(&k).unwrap(),
            RecordKey::Offset {
                group: "g".into(),
                topic: "t".into(),
                partition: 7
            }
        );
    }

    #[test]
    fn group_key_has_kafkas_layout() {
        let k = group_key("ab").unwrap();
        assert_eq!(&k[..], &[0, 2, 0, 2, b'a', b'b']);
        assert_eq!(
            decode_key(&k).unwrap(),
            RecordKey::GroupMetadata { group: "ab".into() }
        );
        assert_eq!(decode_key(&[0, 3, 0, 0]).unwrap(), RecordKey::Other(3));
    }

    #[test]
    fn offset_value_v3_round_trips_byte_for_byte() {
        let v = OffsetValue {
            offset: 42,
            leader_epoch: 5,
            metadata: "m".into(),
            commit_timestamp_ms: 1000,
            expire_timestamp_ms: None,
        };
        let b = offset_value(&v).unwrap();
        let mut want = vec![0, 3];
        want.extend_from_slice(&42i64.to_be_bytes());
        want.extend_from_slice(&5i32.to_be_bytes());
        want.extend_from_slice(&[0, 1, b'm']);
        want.extend_from_slice(&1000i64.to_be_bytes());
        assert_eq!(&b[..], &want[..]);
        assert_eq!(decode_offset_value(&b).unwrap(), v);
    }

    #[test]
    fn offset_value_with_expiry_is_written_as_v1() {
        let v = OffsetValue {
            offset: 1,
            leader_epoch: -1,
            metadata: String::new(),
            commit_timestamp_ms: 10,
            expire_timestamp_ms: Some(20),
        };
        let b = offset_value(&v).unwrap();
        assert_eq!(&b[..2], &[0, 1]);
        assert_eq!(decode_offset_value(&b).unwrap(), v);
    }

    #[test]
    fn offset_value_v0_and_v2_have_no_epoch() {
        for version in [0i16, 2] {
            let mut b = version.to_be_bytes().to_vec();
            b.extend_from_slice(&9i64.to_be_bytes());
            b.extend_from_slice(&[0, 0]);
            b.extend_from_slice(&77i64.to_be_bytes());
            let v = decode_offset_value(&b).unwrap();
            assert_eq!(
                (v.offset, v.leader_epoch, v.commit_timestamp_ms),
                (9, -1, 77)
            );
        }
    }

    #[test]
    fn offset_value_v4_is_flexible() {
        let mut b = 4i16.to_be_bytes().to_vec();
        b.extend_from_slice(&3i64.to_be_bytes());
        b.extend_from_slice(&2i32.to_be_bytes());
        b.extend_from_slice(&[3, b'h', b'i']); // compact string "hi"
        b.extend_from_slice(&8i64.to_be_bytes());
        b.extend_from_slice(&[1, 0, 2, 0xaa, 0xbb]); // one tagged field, 2 bytes
        let v = decode_offset_value(&b).unwrap();
        assert_eq!(
            (
                v.offset,
                v.leader_epoch,
                v.metadata.as_str(),
                v.commit_timestamp_ms
            ),
            (3, 2, "hi", 8)
        );
    }

    #[test]
    fn group_value_round_trips() {
        let v = GroupValue {
            protocol_type: "consumer".into(),
            generation: 3,
            protocol: Some("range".into()),
            leader: Some("m1".into()),
            current_state_timestamp_ms: 123,
            members: vec![
                MemberValue {
                    member_id: "m1".into(),
                    group_instance_id: Some("i1".into()),
                    client_id: "c".into(),
                    client_host: "/127.0.0.1".into(),
                    rebalance_timeout_ms: 300_000,
                    session_timeout_ms: 45_000,
                    subscription: Bytes::from_static(b"sub"),
                    assignment: Bytes::from_static(b"asg"),
                },
                MemberValue {
                    member_id: "m2".into(),
                    group_instance_id: None,
                    client_id: "c".into(),
                    client_host: "/127.0.0.1".into(),
                    rebalance_timeout_ms: 1,
                    session_timeout_ms: 2,
                    subscription: Bytes::new(),
                    assignment: Bytes::new(),
                },
            ],
        };
        let b = group_value(&v).unwrap();
        assert_eq!(&b[..2], &[0, 3]);
        assert_eq!(decode_group_value(&b).unwrap(), v);
        // An empty group: null protocol and leader.
        let e = GroupValue {
            protocol_type: String::new(),
            generation: 0,
            protocol: None,
            leader: None,
            current_state_timestamp_ms: -1,
            members: vec![],
        };
        assert_eq!(decode_group_value(&group_value(&e).unwrap()).unwrap(), e);
    }

    #[test]
    fn truncated_values_are_errors_not_panics() {
        let b = group_value(&GroupValue {
            protocol_type: "consumer".into(),
            generation: 1,
            protocol: None,
            leader: None,
            current_state_timestamp_ms: 0,
            members: vec![],
        })
        .unwrap();
        for n in 0..b.len() {
            assert!(decode_group_value(&b[..n]).is_err(), "cut at {n}");
        }
        assert!(decode_offset_value(&[0, 9]).is_err());
        // A huge member count does not allocate.
        let mut bad = b[..b.len() - 4].to_vec();
        bad.extend_from_slice(&i32::MAX.to_be_bytes());
        assert!(decode_group_value(&bad).is_err());
    }

    #[test]
    fn overlong_strings_are_refused() {
        let long = "x".repeat(40_000);
        assert!(offset_key(&long, "t", 0).is_err());
        assert!(group_key(&long).is_err());
    }

    #[test]
    fn consumer_subscription_topics_reads_the_v0_prefix() {
        // version 1, topics ["a", "bc"], then fields of later versions.
        let b = [
            0, 1, 0, 0, 0, 2, 0, 1, b'a', 0, 2, b'b', b'c', 0xff, 0xff, 0xff, 0xff,
        ];
        assert_eq!(
            consumer_subscription_topics(&b),
            Some(vec!["a".to_string(), "bc".to_string()])
        );
        assert_eq!(consumer_subscription_topics(&[0]), None);
    }
}
