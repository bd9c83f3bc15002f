//! Control records (Kafka's `ControlRecordType`, `EndTransactionMarker`) and KIP-1279's
//! MIRROR_PID_RESET barrier.
//!
//! A control record's key is `version int16 (0)` + `type int16`. Its value depends on the type:
//! ABORT/COMMIT carry `version int16 (0)` + `coordinatorEpoch int32`; MIRROR_PID_RESET carries a
//! `MirrorPidResetRecord` (see [`MirrorPidReset`]). Unknown types are tolerated, as Kafka's
//! readers must tolerate them.

use super::Record;
use super::varint::{read_unsigned_varint, write_unsigned};

/// The control record types Kafka defines, plus KIP-1279's MIRROR_PID_RESET (7).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ControlRecordType {
    /// 0: a transaction aborted.
    Abort,
    /// 1: a transaction committed.
    Commit,
    /// 2: KRaft leader change.
    LeaderChange,
    /// 3: KRaft snapshot header.
    SnapshotHeader,
    /// 4: KRaft snapshot footer.
    SnapshotFooter,
    /// 5: KRaft version.
    KraftVersion,
    /// 6: KRaft voters.
    KraftVoters,
    /// 7 (KIP-1279): forget every producer learned from mirrored data.
    MirrorPidReset,
    /// Any other type id; readers ignore it.
    Unknown(i16),
}

impl ControlRecordType {
    /// The type for a key's type id.
    pub fn from_id(id: i16) -> ControlRecordType {
        match id {
            0 => ControlRecordType::Abort,
            1 => ControlRecordType::Commit,
            2 => ControlRecordType::LeaderChange,
            3 => ControlRecordType::SnapshotHeader,
            4 => ControlRecordType::SnapshotFooter,
            5 => ControlRecordType::KraftVersion,
            6 => ControlRecordType::KraftVoters,
            7 => ControlRecordType::MirrorPidReset,
            other => ControlRecordType::Unknown(other),
        }
    }

    /// The type id written in the key.
    pub fn id(self) -> i16 {
        match self {
            ControlRecordType::Abort => 0,
            ControlRecordType::Commit => 1,
            ControlRecordType::LeaderChange => 2,
            ControlRecordType::SnapshotHeader => 3,
            ControlRecordType::SnapshotFooter => 4,
            ControlRecordType::KraftVersion => 5,
            ControlRecordType::KraftVoters => 6,
            ControlRecordType::MirrorPidReset => 7,
            ControlRecordType::Unknown(id) => id,
        }
    }

    /// The name `mirrorlog dump --json` prints: `abort`, `commit`, `leader_change`,
    /// `mirror_pid_reset`, or `unknown` for every other type (KRaft's own types included).
    pub fn dump_name(self) -> &'static str {
        match self {
            ControlRecordType::Abort => "abort",
            ControlRecordType::Commit => "commit",
            ControlRecordType::LeaderChange => "leader_change",
            ControlRecordType::MirrorPidReset => "mirror_pid_reset",
            _ => "unknown",
        }
    }

    /// The 4-byte key of a control record of this type.
    pub fn key(self) -> [u8; 4] {
        let id = self.id().to_be_bytes();
        [0, 0, id[0], id[1]]
    }
}

/// An end-transaction marker's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EndTxnMarker {
    /// Value version (0; higher versions are read as 0, as Kafka does).
    pub version: i16,
    /// The transaction coordinator's epoch.
    pub coordinator_epoch: i32,
}

impl EndTxnMarker {
    /// The 6-byte value.
    pub fn encode(&self) -> [u8; 6] {
        let v = self.version.to_be_bytes();
        let e = self.coordinator_epoch.to_be_bytes();
        [v[0], v[1], e[0], e[1], e[2], e[3]]
    }
}

/// KIP-1279's MIRROR_PID_RESET value.
///
/// Encoded as Kafka encodes its other message-typed control values (`LeaderChangeMessage`,
/// written with `MessageUtil.toByteBufferAccessor(message, version)`): the v0 flexible
/// `MirrorPidResetRecord` body and nothing else — `Version int16`, `SourceClusterId` compact
/// string (uvarint length + 1, 0 = null), a tagged-field section. Readers also accept a value
/// that stops after `Version` (the prototype's first revision had no cluster id) and, for logs
/// written by earlier mirrorlog versions, the same body behind an extra `int16` prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MirrorPidReset {
    /// The record's `Version` field (0).
    pub version: i16,
    /// The source cluster the reset producers came from.
    pub source_cluster_id: Option<String>,
}

impl MirrorPidReset {
    /// The value bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut out =
            Vec::with_capacity(6 + self.source_cluster_id.as_ref().map_or(0, |s| s.len()));
        out.extend_from_slice(&self.version.to_be_bytes());
        match &self.source_cluster_id {
            None => write_unsigned(&mut out, 0),
            Some(id) => {
                write_unsigned(&mut out, id.len() as u64 + 1);
                out.extend_from_slice(id.as_bytes());
            }
        }
        write_unsigned(&mut out, 0);
        out
    }

    fn decode(v: &[u8]) -> Result<MirrorPidReset, String> {
        match Self::decode_body(v) {
            Ok(m) => Ok(m),
            // Earlier mirrorlog versions wrote an int16 0 before the body.
            Err(e) => match v {
                [0, 0, body @ ..] if body.len() >= 2 => Self::decode_body(body).map_err(|_| e),
                _ => Err(e),
            },
        }
    }

    /// The `MirrorPidResetRecord` body; every byte must be accounted for.
    fn decode_body(v: &[u8]) -> Result<MirrorPidReset, String> {
        if v.len() < 2 {
            return Err(format!(
                "MIRROR_PID_RESET value is {} bytes, needs at least 2",
                v.len()
            ));
        }
        let version = i16::from_be_bytes([v[0], v[1]]);
        let rest = &v[2..];
        if rest.is_empty() {
            return Ok(MirrorPidReset {
                version,
                source_cluster_id: None,
            });
        }
        let corrupt = || "MIRROR_PID_RESET SourceClusterId length is corrupt".to_string();
        let (len, n) = read_unsigned_varint(rest).map_err(|_| corrupt())?;
        let mut pos = n;
        let source_cluster_id = if len == 0 {
            None
        } else {
            let end = pos
                .checked_add(len as usize - 1)
                .filter(|&e| e <= rest.len())
                .ok_or("MIRROR_PID_RESET SourceClusterId runs past the value")?;
            let s = &rest[pos..end];
            pos = end;
            Some(
                String::from_utf8(s.to_vec())
                    .map_err(|_| "MIRROR_PID_RESET SourceClusterId is not UTF-8".to_string())?,
            )
        };
        // The tagged-field section: unknown tags are skipped, as Kafka's readers skip them.
        let tags_err = || "MIRROR_PID_RESET tagged fields are corrupt".to_string();
        let (count, n) = read_unsigned_varint(&rest[pos..]).map_err(|_| tags_err())?;
        pos += n;
        for _ in 0..count {
            let (_tag, n) = read_unsigned_varint(&rest[pos..]).map_err(|_| tags_err())?;
            pos += n;
            let (size, n) = read_unsigned_varint(&rest[pos..]).map_err(|_| tags_err())?;
            pos += n;
            pos = pos
                .checked_add(size as usize)
                .filter(|&e| e <= rest.len())
                .ok_or_else(tags_err)?;
        }
        if pos != rest.len() {
            return Err(format!(
                "MIRROR_PID_RESET value has {} bytes after its fields",
                rest.len() - pos
            ));
        }
        Ok(MirrorPidReset {
            version,
            source_cluster_id,
        })
    }
}

/// A decoded control record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControlRecord {
    /// The key's version (≥ 0; versions above 0 are read as 0).
    pub key_version: i16,
    /// The type.
    pub kind: ControlRecordType,
    /// For ABORT/COMMIT, the marker value.
    pub end_txn: Option<EndTxnMarker>,
    /// For MIRROR_PID_RESET, its value (when present).
    pub mirror_pid_reset: Option<MirrorPidReset>,
}

impl ControlRecord {
    /// Parses a control batch's record, applying Kafka's rules: the key must be at least 4 bytes
    /// with a non-negative version; ABORT/COMMIT need a 6-byte value with a non-negative version.
    pub fn parse(record: &Record) -> Result<ControlRecord, String> {
        let key = record
            .key
            .as_deref()
            .ok_or("control record has a null key")?;
        if key.len() < 4 {
            return Err(format!(
                "control record key is {} bytes, needs 4",
                key.len()
            ));
        }
        let key_version = i16::from_be_bytes([key[0], key[1]]);
        if key_version < 0 {
            return Err(format!(
                "control record key version {key_version} is negative"
            ));
        }
        let kind = ControlRecordType::from_id(i16::from_be_bytes([key[2], key[3]]));
        let mut out = ControlRecord {
            key_version,
            kind,
            end_txn: None,
            mirror_pid_reset: None,
        };
        match kind {
            ControlRecordType::Abort | ControlRecordType::Commit => {
                let v = record
                    .value
                    .as_deref()
                    .ok_or("end transaction marker has a null value")?;
                if v.len() < 6 {
                    return Err(format!(
                        "end transaction marker value is {} bytes, needs 6",
                        v.len()
                    ));
                }
                let version = i16::from_be_bytes([v[0], v[1]]);
                if version < 0 {
                    return Err(format!(
                        "end transaction marker version {version} is negative"
                    ));
                }
                let coordinator_epoch = i32::from_be_bytes([v[2], v[3], v[4], v[5]]);
                out.end_txn = Some(EndTxnMarker {
                    version,
                    coordinator_epoch,
                });
            }
            ControlRecordType::MirrorPidReset => {
                if let Some(v) = record.value.as_deref() {
                    out.mirror_pid_reset = Some(MirrorPidReset::decode(v)?);
                }
            }
            _ => {}
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_ids_round_trip_and_unknown_ids_are_kept() {
        for id in -3..12 {
            assert_eq!(ControlRecordType::from_id(id).id(), id);
        }
        assert_eq!(
            ControlRecordType::from_id(7),
            ControlRecordType::MirrorPidReset
        );
        assert_eq!(ControlRecordType::from_id(42).dump_name(), "unknown");
    }

    #[test]
    fn mirror_pid_reset_value_round_trips() {
        for id in [None, Some("rwd2jqiwRaCycLq7mKVHXA".to_string())] {
            let m = MirrorPidReset {
                version: 0,
                source_cluster_id: id,
            };
            assert_eq!(MirrorPidReset::decode(&m.encode()).unwrap(), m);
        }
        assert!(MirrorPidReset::decode(&[0, 0, 9, b'a', 0]).is_err());
        assert!(MirrorPidReset::decode(&[0, 0, 0, 0, 9, b'a', 0]).is_err());
        // What earlier mirrorlog versions wrote: an int16 0 before the body.
        assert_eq!(
            MirrorPidReset::decode(&[0, 0, 0, 0, 4, b's', b'r', b'c', 0]).unwrap(),
            MirrorPidReset {
                version: 0,
                source_cluster_id: Some("src".into()),
            }
        );
    }
}
