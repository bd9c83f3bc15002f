//! `partition.metadata`: the topic id a partition directory belongs to (Kafka's
//! `PartitionMetadataFile`), written before any log data.
//!
//! ```text
//! version: 0\n
//! topic_id: <22 characters: the 16-byte id in base64url, no padding>
//! ```
//!
//! There is no newline after the id (Kafka writes none). Written atomically; no checksum.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use crate::error::{Error, Result};
use crate::files::{read_text_if_exists, write_atomically};

/// The file's name inside a partition directory.
pub const PARTITION_METADATA_FILE: &str = "partition.metadata";
/// The only version Kafka writes.
pub const PARTITION_METADATA_VERSION: i32 = 0;

/// A topic id: a 16-byte UUID, printed as Kafka prints it (base64url without padding).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct TopicId(pub [u8; 16]);

impl TopicId {
    /// Kafka's `Uuid.ZERO_UUID`, never a valid topic id.
    pub const ZERO: TopicId = TopicId([0; 16]);
    /// Kafka's `Uuid.METADATA_TOPIC_ID` (`AAAAAAAAAAAAAAAAAAAAAQ`), the id of `__cluster_metadata`.
    pub const METADATA_TOPIC: TopicId = TopicId([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
}

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// The 6-bit value of a base64url character.
fn sextet(c: u8) -> Option<u32> {
    match c {
        b'A'..=b'Z' => Some(u32::from(c - b'A')),
        b'a'..=b'z' => Some(u32::from(c - b'a') + 26),
        b'0'..=b'9' => Some(u32::from(c - b'0') + 52),
        b'-' => Some(62),
        b'_' => Some(63),
        _ => None,
    }
}

impl fmt::Display for TopicId {
    /// 22 base64url characters: five 3-byte groups (4 characters each), then the last byte as 2.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = [0u8; 22];
        let char_of = |v: u32| ALPHABET[(v & 0x3f) as usize];
        for (group, chars) in self.0[..15].chunks_exact(3).zip(out.chunks_exact_mut(4)) {
            let n = u32::from(group[0]) << 16 | u32::from(group[1]) << 8 | u32::from(group[2]);
            for (i, c) in chars.iter_mut().enumerate() {
                *c = char_of(n >> (18 - 6 * i));
            }
        }
        let last = u32::from(self.0[15]);
        out[20] = char_of(last >> 2);
        out[21] = char_of(last << 4);
        f.write_str(std::str::from_utf8(&out).expect("ASCII alphabet"))
    }
}

impl fmt::Debug for TopicId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TopicId({self})")
    }
}

/// Why a string is not a topic id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("not a base64url-encoded 16-byte topic id")]
pub struct ParseTopicIdError;

impl FromStr for TopicId {
    type Err = ParseTopicIdError;

    /// Accepts the 22-character form and, like Java's URL decoder, the padded 24-character form
    /// ending in `==`. The unused low 4 bits of the last character must be zero, so that every id
    /// has exactly one spelling.
    fn from_str(s: &str) -> Result<Self, ParseTopicIdError> {
        let s = s.strip_suffix("==").unwrap_or(s).as_bytes();
        if s.len() != 22 {
            return Err(ParseTopicIdError);
        }
        let mut sextets = [0u32; 22];
        for (v, &c) in sextets.iter_mut().zip(s) {
            *v = sextet(c).ok_or(ParseTopicIdError)?;
        }
        let mut bytes = [0u8; 16];
        for (group, chars) in bytes[..15].chunks_exact_mut(3).zip(sextets.chunks_exact(4)) {
            let n = chars[0] << 18 | chars[1] << 12 | chars[2] << 6 | chars[3];
            group.copy_from_slice(&n.to_be_bytes()[1..]);
        }
        if sextets[21] & 0x0f != 0 {
            return Err(ParseTopicIdError);
        }
        bytes[15] = (sextets[20] << 2 | sextets[21] >> 4) as u8;
        Ok(TopicId(bytes))
    }
}

/// The contents of `partition.metadata`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PartitionMetadata {
    /// The topic this partition belongs to.
    pub topic_id: TopicId,
}

impl PartitionMetadata {
    /// The file's exact text.
    pub fn encode(&self) -> String {
        format!(
            "version: {PARTITION_METADATA_VERSION}\ntopic_id: {}",
            self.topic_id
        )
    }

    /// Parses the text of the file at `path` (named in errors). Fields are split on whitespace as
    /// Kafka does; the labels must be `version:` and `topic_id:`, the version 0, and the id a
    /// non-zero topic id. Anything else is [`Error::Corrupt`] naming the line.
    pub fn decode(path: &Path, text: &str) -> Result<Self> {
        let mut lines = text.lines();
        let bad = |line: usize, position: usize, reason: String| {
            Error::corrupt(path, position as u64, format!("line {line}: {reason}"))
        };
        let version_line = lines.next().unwrap_or("");
        match version_line.split_whitespace().collect::<Vec<_>>()[..] {
            ["version:", v] => match v.parse::<i32>() {
                Ok(PARTITION_METADATA_VERSION) => {}
                _ => return Err(bad(1, 0, format!("unsupported version {v:?}"))),
            },
            _ => {
                return Err(bad(
                    1,
                    0,
                    format!("malformed version line {version_line:?}"),
                ));
            }
        }
        let at = (version_line.len() + 1).min(text.len());
        let id_line = lines.next().unwrap_or("");
        let topic_id = match id_line.split_whitespace().collect::<Vec<_>>()[..] {
            ["topic_id:", id] => id
                .parse::<TopicId>()
                .map_err(|e| bad(2, at, format!("{e}: {id:?}")))?,
            _ => return Err(bad(2, at, format!("malformed topic id line {id_line:?}"))),
        };
        if topic_id == TopicId::ZERO {
            return Err(bad(2, at, "the zero uuid is not a topic id".to_owned()));
        }
        if let Some(extra) = lines.find(|l| !l.trim().is_empty()) {
            return Err(bad(3, text.len(), format!("unexpected line {extra:?}")));
        }
        Ok(PartitionMetadata { topic_id })
    }

    /// `<partition dir>/partition.metadata`.
    pub fn path_in(partition_dir: &Path) -> PathBuf {
        partition_dir.join(PARTITION_METADATA_FILE)
    }

    /// Reads the file at `path`; `None` when it does not exist.
    pub fn read(path: &Path) -> Result<Option<Self>> {
        let Some(text) = read_text_if_exists(path)? else {
            return Ok(None);
        };
        Self::decode(path, &text).map(Some)
    }

    /// Writes the file at `path`, atomically and durably.
    pub fn write(&self, path: &Path) -> Result<()> {
        write_atomically(path, self.encode().as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::fs;

    fn id(s: &str) -> TopicId {
        s.parse().unwrap()
    }

    #[test]
    fn topic_ids_print_like_kafkas_uuid_to_string() {
        assert_eq!(
            TopicId::METADATA_TOPIC.to_string(),
            "AAAAAAAAAAAAAAAAAAAAAQ"
        );
        assert_eq!(TopicId::ZERO.to_string(), "AAAAAAAAAAAAAAAAAAAAAA");
        assert_eq!(TopicId([0xff; 16]).to_string(), "_____________________w");
        let foo = id("v9meXjI1RVKB-NSvF0GXDA");
        assert_eq!(
            foo.0,
            [
                0xbf, 0xd9, 0x9e, 0x5e, 0x32, 0x35, 0x45, 0x52, 0x81, 0xf8, 0xd4, 0xaf, 0x17, 0x41,
                0x97, 0x0c
            ]
        );
        assert_eq!(foo.to_string(), "v9meXjI1RVKB-NSvF0GXDA");
    }

    #[test]
    fn padded_ids_parse_and_malformed_ids_do_not() {
        assert_eq!(id("AAAAAAAAAAAAAAAAAAAAAQ=="), TopicId::METADATA_TOPIC);
        for bad in [
            "",
            "AAAAAAAAAAAAAAAAAAAAA",
            "AAAAAAAAAAAAAAAAAAAAAAA",
            "AAAAAAAAAAAAAAAAAAAAA+",
            "AAAAAAAAAAAAAAAAAAAAA/",
            "AAAAAAAAAAAAAAAAAAAAAB",
            "AAAAAAAAAAAAAAAAAAAAAQ=",
            "AAAAAAAAAAAAAAAAAAAA=Q",
        ] {
            assert_eq!(bad.parse::<TopicId>(), Err(ParseTopicIdError), "{bad:?}");
        }
    }

    #[test]
    fn file_text_is_kafkas_with_no_trailing_newline() {
        let meta = PartitionMetadata {
            topic_id: id("v9meXjI1RVKB-NSvF0GXDA"),
        };
        assert_eq!(
            meta.encode(),
            "version: 0\ntopic_id: v9meXjI1RVKB-NSvF0GXDA"
        );
        let dir = tempfile::tempdir().unwrap();
        let path = PartitionMetadata::path_in(dir.path());
        assert_eq!(PartitionMetadata::read(&path).unwrap(), None);
        meta.write(&path).unwrap();
        assert_eq!(fs::read(&path).unwrap().len(), 43);
        assert_eq!(PartitionMetadata::read(&path).unwrap(), Some(meta));
    }

    #[test]
    fn decoding_tolerates_whitespace_and_a_trailing_newline() {
        let meta = PartitionMetadata::decode(
            Path::new("p"),
            "version:   0\r\ntopic_id:\tAAAAAAAAAAAAAAAAAAAAAQ\n",
        )
        .unwrap();
        assert_eq!(meta.topic_id, TopicId::METADATA_TOPIC);
    }

    #[test]
    fn malformed_files_are_corrupt_errors_naming_the_line() {
        let cases: &[(&str, &str)] = &[
            ("", "line 1"),
            (
                "version: 1\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ",
                "line 1: unsupported version",
            ),
            ("versio: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ", "line 1"),
            ("version: 0", "line 2"),
            ("version: 0\ntopic: AAAAAAAAAAAAAAAAAAAAAQ", "line 2"),
            ("version: 0\ntopic_id: AAAA", "line 2"),
            (
                "version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA",
                "line 2: the zero uuid",
            ),
            (
                "version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ\nmore",
                "line 3",
            ),
        ];
        for &(text, needle) in cases {
            match PartitionMetadata::decode(Path::new("p"), text) {
                Err(Error::Corrupt { reason, .. }) => {
                    assert!(reason.contains(needle), "{text:?}: {reason}")
                }
                other => panic!("{text:?}: expected Corrupt, got {other:?}"),
            }
        }
    }

    proptest! {
        #[test]
        fn topic_ids_round_trip_through_text(bytes in any::<[u8; 16]>()) {
            let text = TopicId(bytes).to_string();
            prop_assert_eq!(text.len(), 22);
            prop_assert_eq!(text.parse::<TopicId>(), Ok(TopicId(bytes)));
        }

        #[test]
        fn partition_metadata_round_trips(bytes in any::<[u8; 16]>()) {
            prop_assume!(bytes != [0; 16]);
            let meta = PartitionMetadata { topic_id: TopicId(bytes) };
            let decoded = PartitionMetadata::decode(Path::new("p"), &meta.encode()).unwrap();
            prop_assert_eq!(decoded, meta);
        }

        #[test]
        fn arbitrary_text_decodes_or_errors_without_panicking(text in "\\PC{0,80}") {
            let _ = PartitionMetadata::decode(Path::new("p"), &text);
            let _ = text.parse::<TopicId>();
        }
    }
}
