//! Kafka's checkpoint text files (`CheckpointFile`): the partition's `leader-epoch-checkpoint`
//! and the log-dir-level offset checkpoints (`recovery-point-offset-checkpoint`,
//! `replication-offset-checkpoint`, `log-start-offset-checkpoint`).
//!
//! ```text
//! <version>\n
//! <entry count>\n
//! <entry>\n        × count, fields separated by whitespace (none before the first)
//! ```
//!
//! Written atomically (`<file>.tmp`, fsync, rename, fsync the directory); no checksum — a torn
//! write cannot happen, and a file that does not parse is [`Error::Corrupt`]. A missing or empty
//! file reads as no entries, as in Kafka.

use std::collections::BTreeMap;
use std::fmt::{self, Write as _};
use std::marker::PhantomData;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::files::{read_text_if_exists, write_atomically};
use crate::types::{LeaderEpoch, Offset};

/// The only checkpoint version Kafka writes for these files.
pub const CHECKPOINT_VERSION: i32 = 0;
/// A partition's leader-epoch checkpoint file name.
pub const LEADER_EPOCH_CHECKPOINT_FILE: &str = "leader-epoch-checkpoint";
/// The log-dir-level recovery-point checkpoint file name.
pub const RECOVERY_POINT_OFFSET_CHECKPOINT_FILE: &str = "recovery-point-offset-checkpoint";
/// The log-dir-level high-watermark checkpoint file name.
pub const REPLICATION_OFFSET_CHECKPOINT_FILE: &str = "replication-offset-checkpoint";
/// The log-dir-level log-start-offset checkpoint file name.
pub const LOG_START_OFFSET_CHECKPOINT_FILE: &str = "log-start-offset-checkpoint";

/// One line of a checkpoint file.
pub trait CheckpointEntry: Sized {
    /// Appends the entry's line, without the newline.
    fn format(&self, out: &mut String);
    /// Parses a line (without its newline); `None` when malformed.
    fn parse(line: &str) -> Option<Self>;
}

/// The whole text of a checkpoint file holding `entries`.
pub fn encode_checkpoint<E: CheckpointEntry>(version: i32, entries: &[E]) -> String {
    let mut out = format!("{version}\n{}\n", entries.len());
    for entry in entries {
        entry.format(&mut out);
        out.push('\n');
    }
    out
}

/// Parses the text of the checkpoint file at `path` (used in errors only). Fails with
/// [`Error::Corrupt`] naming the line when the version is not `version`, a line is malformed,
/// or the number of entries differs from the count line.
pub fn decode_checkpoint<E: CheckpointEntry>(
    path: &Path,
    version: i32,
    text: &str,
) -> Result<Vec<E>> {
    let mut lines = Lines::new(text);
    let Some((at, line)) = lines.next() else {
        return Ok(Vec::new());
    };
    // Kafka's `Integer.parseInt` of the whole line: no whitespace around the number.
    match line.parse::<i32>() {
        Ok(v) if v == version => {}
        Ok(v) => return Err(lines.error(path, at, format!("unsupported version {v}"))),
        Err(_) => return Err(lines.error(path, at, format!("malformed version {line:?}"))),
    }
    // Kafka's `CheckpointFile` reader: a file that ends after its version line has no entries.
    let Some((at, line)) = lines.next() else {
        return Ok(Vec::new());
    };
    let Ok(expected) = line.parse::<usize>() else {
        return Err(lines.error(path, at, format!("malformed entry count {line:?}")));
    };
    // The count comes from the file: do not trust it for an allocation.
    let mut entries = Vec::with_capacity(expected.min(text.len()));
    while let Some((at, line)) = lines.next() {
        match E::parse(line) {
            Some(entry) => entries.push(entry),
            None => return Err(lines.error(path, at, format!("malformed entry {line:?}"))),
        }
    }
    if entries.len() != expected {
        return Err(Error::corrupt(
            path,
            text.len() as u64,
            format!("expected {expected} entries, found {}", entries.len()),
        ));
    }
    Ok(entries)
}

/// Whether `c` separates fields for Kafka's formatters (`\s` in their Java pattern `\s+`:
/// space, tab, line feed, vertical tab, form feed, carriage return).
fn is_kafka_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\u{b}' | '\u{c}' | '\r')
}

/// An entry line's fields as Kafka's formatters split it (`line.split("\\s+")`): `None` when the
/// line starts with whitespace, where Java's split gives an empty first field that no entry
/// parses; whitespace at the end is ignored, as the split drops trailing empty fields.
fn kafka_fields(line: &str) -> Option<impl Iterator<Item = &str>> {
    if line.starts_with(is_kafka_space) {
        return None;
    }
    Some(line.split(is_kafka_space).filter(|f| !f.is_empty()))
}

/// Lines of a checkpoint with their byte positions and 1-based numbers, for error messages.
struct Lines<'a> {
    rest: &'a str,
    position: usize,
    number: usize,
}

impl<'a> Lines<'a> {
    fn new(text: &'a str) -> Self {
        Lines {
            rest: text,
            position: 0,
            number: 0,
        }
    }

    /// The next line (without `\n` or `\r\n`) and the byte position where it starts.
    fn next(&mut self) -> Option<(usize, &'a str)> {
        if self.rest.is_empty() {
            return None;
        }
        let start = self.position;
        let (line, rest) = match self.rest.split_once('\n') {
            Some((line, rest)) => (line, rest),
            None => (self.rest, ""),
        };
        self.position += self.rest.len() - rest.len();
        self.rest = rest;
        self.number += 1;
        Some((start, line.strip_suffix('\r').unwrap_or(line)))
    }

    /// A corrupt-file error for the line last returned, which starts at `at`.
    fn error(&self, path: &Path, at: usize, reason: impl fmt::Display) -> Error {
        Error::corrupt(path, at as u64, format!("line {}: {reason}", self.number))
    }
}

/// A checkpoint file of `E` entries at a path.
#[derive(Debug, Clone)]
pub struct CheckpointFile<E> {
    path: PathBuf,
    version: i32,
    _entry: PhantomData<fn() -> E>,
}

impl<E: CheckpointEntry> CheckpointFile<E> {
    /// A checkpoint at `path` with the given format `version` (Kafka uses 0 everywhere).
    pub fn new(path: impl Into<PathBuf>, version: i32) -> Self {
        CheckpointFile {
            path: path.into(),
            version,
            _entry: PhantomData,
        }
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Reads every entry; a missing file has none.
    pub fn read(&self) -> Result<Vec<E>> {
        let Some(text) = read_text_if_exists(&self.path)? else {
            return Ok(Vec::new());
        };
        decode_checkpoint(&self.path, self.version, &text)
    }

    /// Replaces the file's contents with `entries`, atomically and durably.
    pub fn write(&self, entries: &[E]) -> Result<()> {
        write_atomically(
            &self.path,
            encode_checkpoint(self.version, entries).as_bytes(),
        )
    }
}

/// The start of a leader epoch: `epoch startOffset` in `leader-epoch-checkpoint`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct EpochEntry {
    /// The leader epoch.
    pub epoch: LeaderEpoch,
    /// The first offset written in that epoch.
    pub start_offset: Offset,
}

impl CheckpointEntry for EpochEntry {
    fn format(&self, out: &mut String) {
        write!(out, "{} {}", self.epoch, self.start_offset).expect("writing to a String");
    }

    fn parse(line: &str) -> Option<Self> {
        let mut fields = kafka_fields(line)?;
        let epoch = fields.next()?.parse().ok()?;
        let start_offset = fields.next()?.parse().ok()?;
        fields.next().is_none().then_some(EpochEntry {
            epoch: LeaderEpoch(epoch),
            start_offset: Offset(start_offset),
        })
    }
}

/// A partition's `leader-epoch-checkpoint` (Kafka's `LeaderEpochCheckpointFile`).
#[derive(Debug, Clone)]
pub struct LeaderEpochCheckpoint(CheckpointFile<EpochEntry>);

impl LeaderEpochCheckpoint {
    /// The checkpoint at `path` (usually `<partition dir>/leader-epoch-checkpoint`).
    pub fn new(path: impl Into<PathBuf>) -> Self {
        LeaderEpochCheckpoint(CheckpointFile::new(path, CHECKPOINT_VERSION))
    }

    /// The checkpoint of the partition in `partition_dir`.
    pub fn in_dir(partition_dir: &Path) -> Self {
        Self::new(partition_dir.join(LEADER_EPOCH_CHECKPOINT_FILE))
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        self.0.path()
    }

    /// Reads the entries in file order; a missing file has none.
    pub fn read(&self) -> Result<Vec<EpochEntry>> {
        self.0.read()
    }

    /// Replaces the file with `entries`, atomically and durably.
    pub fn write(&self, entries: &[EpochEntry]) -> Result<()> {
        self.0.write(entries)
    }
}

/// A topic partition as named in log-dir-level checkpoints.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TopicPartition {
    /// The topic name (Kafka's legal characters: ASCII letters, digits, `.`, `_`, `-`).
    pub topic: String,
    /// The partition number.
    pub partition: i32,
}

impl fmt::Display for TopicPartition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.topic, self.partition)
    }
}

/// One line of an offset checkpoint: `topic partition offset`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PartitionOffset {
    /// The partition.
    pub topic_partition: TopicPartition,
    /// Its checkpointed offset.
    pub offset: Offset,
}

impl CheckpointEntry for PartitionOffset {
    fn format(&self, out: &mut String) {
        let tp = &self.topic_partition;
        write!(out, "{} {} {}", tp.topic, tp.partition, self.offset).expect("writing to a String");
    }

    fn parse(line: &str) -> Option<Self> {
        let mut fields = kafka_fields(line)?;
        let topic = fields.next()?.to_owned();
        let partition = fields.next()?.parse().ok()?;
        let offset = fields.next()?.parse().ok()?;
        fields.next().is_none().then_some(PartitionOffset {
            topic_partition: TopicPartition { topic, partition },
            offset: Offset(offset),
        })
    }
}

/// A log-dir-level offset checkpoint (Kafka's `OffsetCheckpointFile`): one offset per partition.
#[derive(Debug, Clone)]
pub struct OffsetCheckpoint(CheckpointFile<PartitionOffset>);

impl OffsetCheckpoint {
    /// The checkpoint at `path` (e.g. `<log dir>/recovery-point-offset-checkpoint`).
    pub fn new(path: impl Into<PathBuf>) -> Self {
        OffsetCheckpoint(CheckpointFile::new(path, CHECKPOINT_VERSION))
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        self.0.path()
    }

    /// Reads the offsets; a missing file has none. A partition listed twice keeps its last line.
    pub fn read(&self) -> Result<BTreeMap<TopicPartition, Offset>> {
        Ok(offsets_of(self.0.read()?))
    }

    /// Replaces the file with `offsets`, atomically and durably (lines in partition order).
    pub fn write(&self, offsets: &BTreeMap<TopicPartition, Offset>) -> Result<()> {
        self.0.write(&entries_of(offsets))
    }
}

fn offsets_of(entries: Vec<PartitionOffset>) -> BTreeMap<TopicPartition, Offset> {
    entries
        .into_iter()
        .map(|e| (e.topic_partition, e.offset))
        .collect()
}

fn entries_of(offsets: &BTreeMap<TopicPartition, Offset>) -> Vec<PartitionOffset> {
    offsets
        .iter()
        .map(|(tp, &offset)| PartitionOffset {
            topic_partition: tp.clone(),
            offset,
        })
        .collect()
}

/// The whole text of an offset checkpoint holding `offsets` (lines in partition order), for
/// callers that do their own I/O.
pub fn encode_offset_checkpoint(offsets: &BTreeMap<TopicPartition, Offset>) -> String {
    encode_checkpoint(CHECKPOINT_VERSION, &entries_of(offsets))
}

/// Parses the bytes of the offset checkpoint at `path` (used in errors only), for callers that
/// do their own I/O: as [`OffsetCheckpoint::read`] (empty bytes: no offsets; a partition listed
/// twice keeps its last line), with bytes that are not UTF-8 [`Error::Corrupt`].
pub fn decode_offset_checkpoint(
    path: &Path,
    bytes: &[u8],
) -> Result<BTreeMap<TopicPartition, Offset>> {
    let text = std::str::from_utf8(bytes)
        .map_err(|e| Error::corrupt(path, e.valid_up_to() as u64, "not valid UTF-8"))?;
    Ok(offsets_of(decode_checkpoint(
        path,
        CHECKPOINT_VERSION,
        text,
    )?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::fs;

    fn epochs(pairs: &[(i32, i64)]) -> Vec<EpochEntry> {
        pairs
            .iter()
            .map(|&(e, o)| EpochEntry {
                epoch: LeaderEpoch(e),
                start_offset: Offset(o),
            })
            .collect()
    }

    fn decode_epochs(text: &str) -> Result<Vec<EpochEntry>> {
        decode_checkpoint(Path::new("leader-epoch-checkpoint"), 0, text)
    }

    #[test]
    fn leader_epoch_checkpoint_text_is_kafkas() {
        assert_eq!(encode_checkpoint(0, &epochs(&[(0, 0)])), "0\n1\n0 0\n");
        assert_eq!(
            encode_checkpoint(0, &epochs(&[(3, 100), (5, 2000)])),
            "0\n2\n3 100\n5 2000\n"
        );
        assert_eq!(encode_checkpoint::<EpochEntry>(0, &[]), "0\n0\n");
    }

    #[test]
    fn offset_checkpoint_text_is_kafkas() {
        let mut offsets = BTreeMap::new();
        offsets.insert(
            TopicPartition {
                topic: "foo".into(),
                partition: 0,
            },
            Offset(42),
        );
        offsets.insert(
            TopicPartition {
                topic: "__consumer_offsets".into(),
                partition: 12,
            },
            Offset(7),
        );
        let dir = tempfile::tempdir().unwrap();
        let file = OffsetCheckpoint::new(dir.path().join(RECOVERY_POINT_OFFSET_CHECKPOINT_FILE));
        file.write(&offsets).unwrap();
        assert_eq!(
            fs::read_to_string(file.path()).unwrap(),
            "0\n2\n__consumer_offsets 12 7\nfoo 0 42\n"
        );
        assert_eq!(file.read().unwrap(), offsets);
    }

    #[test]
    fn offset_checkpoint_bytes_round_trip_and_reject_non_utf8() {
        let mut offsets = BTreeMap::new();
        offsets.insert(
            TopicPartition {
                topic: "foo".into(),
                partition: 3,
            },
            Offset(9),
        );
        let text = encode_offset_checkpoint(&offsets);
        assert_eq!(text, "0\n1\nfoo 3 9\n");
        let path = Path::new(RECOVERY_POINT_OFFSET_CHECKPOINT_FILE);
        assert_eq!(
            decode_offset_checkpoint(path, text.as_bytes()).unwrap(),
            offsets
        );
        assert_eq!(
            decode_offset_checkpoint(path, b"").unwrap(),
            BTreeMap::new()
        );
        assert!(matches!(
            decode_offset_checkpoint(path, b"0\n1\n\xff 0 1\n"),
            Err(Error::Corrupt { position: 4, .. })
        ));
    }

    #[test]
    fn fields_may_be_separated_and_followed_by_any_whitespace() {
        assert_eq!(
            decode_epochs("0\n2\n1\t\t5\n2   7 \u{b}\u{c} \r\n").unwrap(),
            epochs(&[(1, 5), (2, 7)])
        );
        assert_eq!(decode_epochs("0\r\n1\r\n3 9").unwrap(), epochs(&[(3, 9)]));
    }

    #[test]
    fn whitespace_kafka_does_not_take_is_corrupt() {
        // Kafka's `Integer.parseInt` of the version and count lines takes no whitespace, and its
        // formatters' `split("\\s+")` gives a line starting with whitespace an empty first field.
        for text in [
            " 0\n1\n3 9\n",
            "0 \n1\n3 9\n",
            "0\n1 \n3 9\n",
            "0\n\t1\n3 9\n",
            "0\n1\n 3 9\n",
            "0\n1\n3\u{a0}9\n",
        ] {
            assert!(
                matches!(decode_epochs(text), Err(Error::Corrupt { .. })),
                "{text:?}"
            );
        }
        let path = Path::new("log-start-offset-checkpoint");
        assert!(matches!(
            decode_offset_checkpoint(path, b"0\n1\n t 0 5\n"),
            Err(Error::Corrupt { .. })
        ));
        assert_eq!(
            decode_offset_checkpoint(path, b"0\n1\nt\t0  5 \n").unwrap()[&TopicPartition {
                topic: "t".into(),
                partition: 0
            }],
            Offset(5)
        );
    }

    #[test]
    fn empty_or_missing_files_have_no_entries() {
        assert_eq!(decode_epochs("").unwrap(), vec![]);
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(
            LeaderEpochCheckpoint::in_dir(dir.path()).read().unwrap(),
            vec![]
        );
    }

    #[test]
    fn a_version_line_alone_has_no_entries_as_in_kafka() {
        assert_eq!(decode_epochs("0\n").unwrap(), vec![]);
        assert_eq!(decode_epochs("0").unwrap(), vec![]);
    }

    #[test]
    fn malformed_lines_are_corrupt_errors_naming_the_line() {
        let cases: &[(&str, u64, &str)] = &[
            ("x\n0\n", 0, "line 1"),
            ("1\n0\n", 0, "line 1: unsupported version 1"),
            ("0\ntwo\n", 2, "line 2"),
            ("0\n2\n1 5\n2\n", 8, "line 4: malformed entry"),
            ("0\n1\n1 5 6\n", 4, "line 3"),
            ("0\n1\n1 x\n", 4, "line 3"),
            ("0\n1\n99999999999 5\n", 4, "line 3"),
            ("0\n1\n\n", 4, "line 3"),
            ("0\n2\n1 5\n", 8, "expected 2 entries, found 1"),
            ("0\n0\n1 5\n", 8, "expected 0 entries, found 1"),
        ];
        for &(text, position, needle) in cases {
            match decode_epochs(text) {
                Err(Error::Corrupt {
                    path,
                    position: p,
                    reason,
                }) => {
                    assert_eq!(path, Path::new("leader-epoch-checkpoint"), "{text:?}");
                    assert_eq!(p, position, "{text:?}: {reason}");
                    assert!(reason.contains(needle), "{text:?}: {reason}");
                }
                other => panic!("{text:?}: expected Corrupt, got {other:?}"),
            }
        }
    }

    #[test]
    fn non_utf8_files_are_corrupt() {
        let dir = tempfile::tempdir().unwrap();
        let cp = LeaderEpochCheckpoint::in_dir(dir.path());
        fs::write(cp.path(), b"0\n1\n\xff 0\n").unwrap();
        assert!(matches!(cp.read(), Err(Error::Corrupt { position: 4, .. })));
    }

    #[test]
    fn write_replaces_atomically_and_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let cp = LeaderEpochCheckpoint::in_dir(dir.path());
        cp.write(&epochs(&[(0, 0), (1, 10)])).unwrap();
        cp.write(&epochs(&[(2, 20)])).unwrap();
        assert_eq!(cp.read().unwrap(), epochs(&[(2, 20)]));
        assert_eq!(fs::read_to_string(cp.path()).unwrap(), "0\n1\n2 20\n");
        assert!(!dir.path().join("leader-epoch-checkpoint.tmp").exists());
    }

    fn arb_topic() -> impl Strategy<Value = String> {
        "[a-zA-Z0-9._-]{1,40}"
    }

    proptest! {
        #[test]
        fn epoch_checkpoints_round_trip(
            pairs in proptest::collection::vec(any::<(i32, i64)>(), 0..50)
        ) {
            let entries = epochs(&pairs);
            let text = encode_checkpoint(0, &entries);
            prop_assert_eq!(decode_epochs(&text).unwrap(), entries);
        }

        #[test]
        fn offset_checkpoints_round_trip(
            lines in proptest::collection::vec((arb_topic(), any::<i32>(), any::<i64>()), 0..50)
        ) {
            let entries: Vec<PartitionOffset> = lines
                .into_iter()
                .map(|(topic, partition, offset)| PartitionOffset {
                    topic_partition: TopicPartition { topic, partition },
                    offset: Offset(offset),
                })
                .collect();
            let text = encode_checkpoint(0, &entries);
            let decoded = decode_checkpoint::<PartitionOffset>(Path::new("c"), 0, &text).unwrap();
            prop_assert_eq!(decoded, entries);
        }

        #[test]
        fn any_text_decodes_or_errors_without_panicking(text in "[0-9 \t\r\n-]{0,60}") {
            let _ = decode_epochs(&text);
            let _ = decode_checkpoint::<PartitionOffset>(Path::new("c"), 0, &text);
        }
    }
}
