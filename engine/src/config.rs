//! A partition log's configuration: [`LogConfig`], named, defaulted and range-checked exactly as
//! Kafka's topic configs are (`LogConfig.java`, `TopicConfig.java`, `ServerLogConfigs.java`).
//!
//! A broker builds its defaults from `server.properties` names (`log.segment.bytes`,
//! `log.retention.hours`, …) and each topic overrides them with topic names (`segment.bytes`,
//! `retention.ms`, …); [`LogConfig::with_overrides`] accepts both spellings, so both steps are one
//! call each: `LogConfig::default().with_overrides(broker_props)?.with_overrides(topic_props)?`.
//! [`LogConfig::to_kafka_pairs`] gives the topic names and values back (what DescribeConfigs
//! shows), and feeding them to `with_overrides` reproduces the configuration.
//!
//! # Keys, defaults and ranges
//!
//! | topic key | broker key(s) | field | default | valid values |
//! |---|---|---|---|---|
//! | `segment.bytes` | `log.segment.bytes` | `segment.segment_bytes_max` | 1073741824 (1 GiB) | 14 ..= 2147483647 ¹ |
//! | `segment.index.bytes` | `log.index.size.max.bytes` | `segment.index_bytes_max` | 10485760 (10 MiB) | 24 ..= 2147483647 ² |
//! | `index.interval.bytes` | `log.index.interval.bytes` | `segment.index_interval_bytes` | 4096 | 0 ..= 2147483647 |
//! | `segment.ms` | `log.roll.ms`, `log.roll.hours` ³ | `segment.segment_ms` | 604800000 (7 days) | 1 ..= i64::MAX |
//! | `segment.jitter.ms` | `log.roll.jitter.ms`, `log.roll.jitter.hours` ³ | `segment_jitter_ms` | 0 | 0 ..= i64::MAX |
//! | `retention.bytes` | `log.retention.bytes` | `retention_bytes` | -1 (unlimited) | any i64; negative = unlimited |
//! | `retention.ms` | `log.retention.ms`, `log.retention.minutes`, `log.retention.hours` ³ ⁴ | `retention_ms` | 604800000 (7 days) | -1 ..= i64::MAX; -1 = unlimited |
//! | `max.message.bytes` | `message.max.bytes` | `max_message_bytes` | 1048588 (1 MiB + 12) | 0 ..= 2147483647 |
//! | `message.timestamp.type` | `log.message.timestamp.type` | `timestamp_type` | `CreateTime` | `CreateTime`, `LogAppendTime` |
//! | `message.timestamp.before.max.ms` | `log.message.timestamp.before.max.ms` | `timestamp_before_max_ms` | 9223372036854775807 | 0 ..= i64::MAX |
//! | `message.timestamp.after.max.ms` | `log.message.timestamp.after.max.ms` | `timestamp_after_max_ms` | 3600000 (1 h, Kafka 4.x) | 0 ..= i64::MAX |
//! | `compression.type` | `compression.type` | `compression` | `producer` | `producer`, `uncompressed`, `gzip`, `snappy`, `lz4`, `zstd` |
//! | `cleanup.policy` | `log.cleanup.policy` | `cleanup_policy` | `delete` | `delete`, or the empty list (infinite retention: `retention.*` ignored, as Kafka 4.2); `compact` is rejected as unsupported |
//! | `flush.messages` | `log.flush.interval.messages` | `flush_messages` | 9223372036854775807 (never by count) | 1 ..= i64::MAX |
//! | `flush.ms` | `log.flush.interval.ms`, `log.flush.scheduler.interval.ms` ³ | `flush_ms` | 9223372036854775807 (never by time) | 0 ..= i64::MAX |
//! | `file.delete.delay.ms` | `log.segment.delete.delay.ms` | `file_delete_delay_ms` | 60000 (a deleted segment's files and producer snapshot stay renamed `.deleted` this long; the broker's value, a deleted partition's `-delete` directory) | 0 ..= i64::MAX |
//! | — | `producer.id.expiration.ms` ⁵ | `producer_id_expiration_ms` | 86400000 (1 day) | 1 ..= 2147483647 |
//! | — | — ⁶ | `read_only` | false | |
//!
//! 1. Kafka 3.x's bound (the smallest legacy record). Kafka 4.x raised the topic config's minimum
//!    to 1048576 and moved smaller sizes to an internal testing key; mirrorlog keeps 14 so that
//!    tests can roll small segments and topic configs copied from 3.x source clusters are
//!    accepted.
//! 2. Kafka accepts ≥ 4; a segment's time index needs room for two 12-byte entries (it keeps
//!    the last slot for the entry written on roll), so mirrorlog rejects 4 ..= 23 with a reason
//!    saying so.
//! 3. Precedence as in Kafka's broker config: the `.ms` name (topic or broker spelling) wins over
//!    `.minutes`, which wins over `.hours` (and `log.flush.interval.ms` over
//!    `log.flush.scheduler.interval.ms`), whatever order the pairs come in. `log.roll.hours` is
//!    ≥ 1 and `log.roll.jitter.hours` ≥ 0, as in Kafka.
//! 4. As in Kafka's broker config, a negative `log.retention.ms`, `log.retention.minutes` or
//!    `log.retention.hours` means unlimited (-1); the topic key `retention.ms` must be ≥ -1.
//! 5. A broker config in Kafka (`TransactionLogConfigs`), kept here because the log's producer
//!    state applies it; it is not a topic config, so [`LogConfig::to_kafka_pairs`] omits it.
//! 6. Not a Kafka config: a mirror topic's read-only flag, set by the mirror layer, never by a
//!    key; [`LogConfig::to_kafka_pairs`] omits it.
//!
//! Numbers are parsed as Kafka parses them: surrounding whitespace trimmed, decimal, `INT` keys
//! (the four `*.bytes` keys above but `retention.bytes`, plus the `.hours`/`.minutes` keys and
//! `producer.id.expiration.ms`) as 32-bit and the rest as 64-bit integers. Enumerated values are
//! case-sensitive, as Kafka's validators are; `cleanup.policy` is a comma-separated list.
//!
//! Kafka topic configs that mirrorlog does not implement (compaction settings, `min.insync.replicas`,
//! tiered storage, …; see [`LogConfig::UNSUPPORTED_KAFKA_TOPIC_KEYS`]) are rejected with
//! [`ConfigError::Unsupported`] rather than [`ConfigError::UnknownKey`], so a caller copying
//! configs from a Kafka cluster can tell the two apart (or filter on
//! [`LogConfig::SUPPORTED_TOPIC_KEYS`] first).

use mirrorlog_segment::Compression;
use mirrorlog_segment::TimestampType;
use mirrorlog_segment::segment::SegmentConfig;

/// A configuration key or value that cannot be accepted. Every variant names the key.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// The key is neither a Kafka topic config nor a broker log config mirrorlog knows.
    #[error("unknown config key `{key}`")]
    UnknownKey {
        /// The key as given.
        key: String,
    },
    /// The value is malformed or out of range for the key.
    #[error("invalid value `{value}` for `{key}`: {reason}")]
    InvalidValue {
        /// The key as given (or, from [`LogConfig::validate`], the topic config name).
        key: String,
        /// The value as given.
        value: String,
        /// What is wrong, as data (the bound, the type, the valid values); its `Display` says
        /// it in words.
        reason: InvalidReason,
    },
    /// A valid Kafka key or value that mirrorlog does not implement.
    #[error("unsupported config `{key}={value}`: {reason}")]
    Unsupported {
        /// The key as given.
        key: String,
        /// The value as given.
        value: String,
        /// Why it is not supported.
        reason: String,
    },
}

/// Why a value was refused: the facts of Kafka's `ConfigDef` checks (range, number type, valid
/// strings), so that a caller can put them in its own words (the broker answers Kafka's
/// `ConfigException` wording) without parsing ours. `Display` gives the engine's words
/// ("must be at least 1", "must be in 24..=2147483647", "expected a 32-bit integer", …).
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InvalidReason {
    /// The number `found` lies outside `min ..= max` (`max` is `i64::MAX` when there is no upper
    /// bound); `why` adds a reason of ours beyond the bound.
    OutOfRange {
        /// The number as parsed.
        found: i64,
        /// The smallest valid value.
        min: i64,
        /// The largest valid value.
        max: i64,
        /// Why the bound is ours, when it differs from Kafka's.
        why: Option<&'static str>,
    },
    /// The value is not a decimal number of the key's type (a 32-bit `INT` also when it does
    /// not fit in 32 bits, as Kafka parses it).
    NotANumber(NumberType),
    /// The value is none of these strings (case-sensitive), listed in Kafka's order.
    NotOneOf(&'static [&'static str]),
    /// A comma-separated list holds an item that is none of these strings.
    NotAListOf(&'static [&'static str]),
    /// Anything else (settings that are not Kafka configs), in words.
    Other(String),
}

/// A Kafka `ConfigDef` number type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NumberType {
    /// `INT`: 32-bit.
    Int,
    /// `LONG`: 64-bit.
    Long,
}

impl NumberType {
    /// Kafka's name of the type (`INT`, `LONG`).
    pub fn kafka_name(self) -> &'static str {
        match self {
            NumberType::Int => "INT",
            NumberType::Long => "LONG",
        }
    }
}

impl std::fmt::Display for InvalidReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let quoted = |valid: &[&str]| {
            valid
                .iter()
                .map(|v| format!("`{v}`"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        match self {
            InvalidReason::OutOfRange { min, max, why, .. } => {
                if *max == i64::MAX {
                    write!(f, "must be at least {min}")?;
                } else {
                    write!(f, "must be in {min}..={max}")?;
                }
                match why {
                    Some(why) => write!(f, ": {why}"),
                    None => Ok(()),
                }
            }
            InvalidReason::NotANumber(NumberType::Int) => f.write_str("expected a 32-bit integer"),
            InvalidReason::NotANumber(NumberType::Long) => f.write_str("expected a 64-bit integer"),
            InvalidReason::NotOneOf(valid) => write!(f, "expected one of {}", quoted(valid)),
            InvalidReason::NotAListOf(valid) => {
                write!(f, "expected a comma-separated list of {}", quoted(valid))
            }
            InvalidReason::Other(why) => f.write_str(why),
        }
    }
}

/// `compression.type`: how the broker stores the batches producers send.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum CompressionConfig {
    /// `producer`: keep whatever codec the producer used (no re-compression). The default.
    #[default]
    Producer,
    /// `uncompressed`: store batches uncompressed.
    Uncompressed,
    /// `gzip`
    Gzip,
    /// `snappy`
    Snappy,
    /// `lz4`
    Lz4,
    /// `zstd`
    Zstd,
}

impl CompressionConfig {
    /// Every value, in Kafka's documentation order.
    pub const ALL: [CompressionConfig; 6] = [
        CompressionConfig::Uncompressed,
        CompressionConfig::Zstd,
        CompressionConfig::Lz4,
        CompressionConfig::Snappy,
        CompressionConfig::Gzip,
        CompressionConfig::Producer,
    ];

    /// Every value's name, in [`CompressionConfig::ALL`]'s order (Kafka's documentation order).
    pub const NAMES: &'static [&'static str] =
        &["uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"];

    /// The Kafka name (`producer`, `uncompressed`, `gzip`, `snappy`, `lz4`, `zstd`).
    pub fn name(self) -> &'static str {
        match self {
            CompressionConfig::Producer => "producer",
            CompressionConfig::Uncompressed => "uncompressed",
            CompressionConfig::Gzip => "gzip",
            CompressionConfig::Snappy => "snappy",
            CompressionConfig::Lz4 => "lz4",
            CompressionConfig::Zstd => "zstd",
        }
    }

    /// The value called `name` (case-sensitive, as Kafka's validator is).
    pub fn from_name(name: &str) -> Option<CompressionConfig> {
        Self::ALL.into_iter().find(|c| c.name() == name)
    }

    /// The codec stored batches must use, or `None` for [`CompressionConfig::Producer`] (keep
    /// the producer's codec).
    pub fn codec(self) -> Option<Compression> {
        match self {
            CompressionConfig::Producer => None,
            CompressionConfig::Uncompressed => Some(Compression::None),
            CompressionConfig::Gzip => Some(Compression::Gzip),
            CompressionConfig::Snappy => Some(Compression::Snappy),
            CompressionConfig::Lz4 => Some(Compression::Lz4),
            CompressionConfig::Zstd => Some(Compression::Zstd),
        }
    }
}

/// `cleanup.policy`: what happens to segments beyond the retention limits. Kafka also has
/// `compact`; mirrorlog does not implement log compaction and rejects it when parsing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum CleanupPolicy {
    /// `delete`: whole segments past `retention.ms` / `retention.bytes` are deleted. The default.
    #[default]
    Delete,
    /// The empty list (`cleanup.policy=`): infinite retention, as in Kafka 4.2 — `retention.ms`
    /// and `retention.bytes` are ignored and only segments wholly below the log start (moved by
    /// DeleteRecords) are deleted.
    Retain,
}

impl CleanupPolicy {
    /// The Kafka name (`delete`, or the empty list for [`CleanupPolicy::Retain`]).
    pub fn name(self) -> &'static str {
        match self {
            CleanupPolicy::Delete => "delete",
            CleanupPolicy::Retain => "",
        }
    }
}

/// `message.timestamp.type`'s values, in Kafka's order.
const TIMESTAMP_TYPE_NAMES: &[&str] = &["CreateTime", "LogAppendTime"];
/// The items `cleanup.policy` may list, in Kafka's order (`compact` is refused as unsupported
/// after parsing).
const CLEANUP_POLICY_NAMES: &[&str] = &["compact", "delete"];

/// The Kafka name of a timestamp type (`CreateTime`, `LogAppendTime`).
fn timestamp_type_name(t: TimestampType) -> &'static str {
    match t {
        TimestampType::CreateTime => "CreateTime",
        TimestampType::LogAppendTime => "LogAppendTime",
    }
}

/// A partition log's configuration. Field docs give the Kafka key, default and valid range; the
/// module docs hold the same facts as a table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogConfig {
    /// Segment settings: `segment.bytes`, `segment.index.bytes`, `index.interval.bytes`,
    /// `segment.ms` (see [`SegmentConfig`]). Its `roll_jitter_ms` is not a config: keep it 0
    /// here; the partition log draws it from [`LogConfig::segment_jitter_ms`].
    pub segment: SegmentConfig,
    /// `segment.jitter.ms`: the most a segment's time-based roll may come early, so that many
    /// partitions do not roll at once. Kafka draws a jitter at random for each segment
    /// ([`LogConfig::segment_config_for_roll`] draws it that way), and so does the partition
    /// log, for each segment it creates or opens. Default 0; range 0 ..= i64::MAX.
    pub segment_jitter_ms: i64,
    /// `retention.bytes`: delete the oldest segments while the log is larger than this. Default
    /// -1; any value, negative meaning unlimited.
    pub retention_bytes: i64,
    /// `retention.ms`: delete segments whose newest record is older than this. Default 604800000
    /// (7 days); range -1 ..= i64::MAX, -1 meaning unlimited.
    pub retention_ms: i64,
    /// `max.message.bytes` (broker: `message.max.bytes`): the largest batch a producer may append
    /// (after any re-compression). Default 1048588; range 0 ..= i32::MAX.
    pub max_message_bytes: i32,
    /// `message.timestamp.type`: `CreateTime` (the producer's timestamps) or `LogAppendTime` (the
    /// broker stamps its clock). Default `CreateTime`.
    pub timestamp_type: TimestampType,
    /// `message.timestamp.before.max.ms`: with `CreateTime`, how far a record's timestamp may lie
    /// before the broker's clock. Default i64::MAX; range 0 ..= i64::MAX.
    pub timestamp_before_max_ms: i64,
    /// `message.timestamp.after.max.ms`: with `CreateTime`, how far a record's timestamp may lie
    /// after the broker's clock. Default 3600000 (1 hour, Kafka 4.x); range 0 ..= i64::MAX.
    pub timestamp_after_max_ms: i64,
    /// `compression.type`. Default [`CompressionConfig::Producer`].
    pub compression: CompressionConfig,
    /// `cleanup.policy`. Default [`CleanupPolicy::Delete`]; the other value is
    /// [`CleanupPolicy::Retain`] (the empty list).
    pub cleanup_policy: CleanupPolicy,
    /// `flush.messages`: fsync once this many offsets were appended since the last flush (log
    /// end − recovery point, as Kafka counts). Default i64::MAX (never by count); range
    /// 1 ..= i64::MAX.
    pub flush_messages: i64,
    /// `flush.ms`: fsync when the oldest unflushed message is this old. Default i64::MAX (never
    /// by time); range 0 ..= i64::MAX.
    pub flush_ms: i64,
    /// `file.delete.delay.ms`: how long a deleted segment's files and producer snapshot
    /// (retention, truncation) stay, renamed `.deleted`, before they are removed (at the log
    /// manager's next upkeep after it; at once when 0); the broker default's value is also how
    /// long a deleted partition's `-delete` directory stays. Default 60000; range
    /// 0 ..= i64::MAX.
    pub file_delete_delay_ms: i64,
    /// `producer.id.expiration.ms` (a broker config): forget an idle producer after this long.
    /// Default 86400000 (1 day); range 1 ..= i32::MAX.
    pub producer_id_expiration_ms: i64,
    /// Not a Kafka config: a mirror topic's read-only flag (client produce is rejected with
    /// `READ_ONLY_TOPIC`). Default false.
    pub read_only: bool,
    /// The topic config names set explicitly for this topic (Kafka's topic overrides:
    /// DescribeConfigs' `DYNAMIC_TOPIC_CONFIG`), whatever their value — an override equal to
    /// the broker default today stays when that default changes. Filled by
    /// [`LogConfig::with_topic_overrides`]; empty for broker defaults. Default empty.
    pub overrides: TopicOverrides,
}

/// The set of a topic's config names set explicitly ([`LogConfig::overrides`]), shared by the
/// topic's partitions: every partition holds its own [`LogConfig`], and 10,000 partitions'
/// copies of a set cost ~2 MiB where one shared copy costs nothing. Reads deref to the set;
/// a change copies it first if another config still shares it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TopicOverrides(std::sync::Arc<std::collections::BTreeSet<&'static str>>);

impl TopicOverrides {
    /// Adds `name`; whether it was new.
    pub fn insert(&mut self, name: &'static str) -> bool {
        if self.0.contains(name) {
            return false;
        }
        std::sync::Arc::make_mut(&mut self.0).insert(name)
    }

    /// Keeps the names `keep` says yes to.
    pub fn retain(&mut self, mut keep: impl FnMut(&&'static str) -> bool) {
        if self.0.iter().all(&mut keep) {
            return;
        }
        std::sync::Arc::make_mut(&mut self.0).retain(keep);
    }
}

impl std::ops::Deref for TopicOverrides {
    type Target = std::collections::BTreeSet<&'static str>;
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl Extend<&'static str> for TopicOverrides {
    fn extend<I: IntoIterator<Item = &'static str>>(&mut self, names: I) {
        for name in names {
            self.insert(name);
        }
    }
}

impl<'a> IntoIterator for &'a TopicOverrides {
    type Item = &'a &'static str;
    type IntoIter = std::collections::btree_set::Iter<'a, &'static str>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

impl FromIterator<&'static str> for TopicOverrides {
    fn from_iter<I: IntoIterator<Item = &'static str>>(names: I) -> Self {
        TopicOverrides(std::sync::Arc::new(names.into_iter().collect()))
    }
}

impl Default for LogConfig {
    /// Kafka's defaults (4.x).
    fn default() -> Self {
        LogConfig {
            segment: SegmentConfig {
                segment_bytes_max: DEFAULT_SEGMENT_BYTES,
                index_bytes_max: DEFAULT_SEGMENT_INDEX_BYTES,
                index_interval_bytes: DEFAULT_INDEX_INTERVAL_BYTES,
                segment_ms: DEFAULT_SEGMENT_MS,
                roll_jitter_ms: 0,
            },
            segment_jitter_ms: 0,
            retention_bytes: -1,
            retention_ms: DEFAULT_RETENTION_MS,
            max_message_bytes: DEFAULT_MAX_MESSAGE_BYTES,
            timestamp_type: TimestampType::CreateTime,
            timestamp_before_max_ms: i64::MAX,
            timestamp_after_max_ms: DEFAULT_TIMESTAMP_AFTER_MAX_MS,
            compression: CompressionConfig::Producer,
            cleanup_policy: CleanupPolicy::Delete,
            flush_messages: i64::MAX,
            flush_ms: i64::MAX,
            file_delete_delay_ms: DEFAULT_FILE_DELETE_DELAY_MS,
            producer_id_expiration_ms: DEFAULT_PRODUCER_ID_EXPIRATION_MS,
            read_only: false,
            overrides: TopicOverrides::default(),
        }
    }
}

const DEFAULT_SEGMENT_BYTES: u32 = 1 << 30;
const DEFAULT_SEGMENT_INDEX_BYTES: u32 = 10 << 20;
const DEFAULT_INDEX_INTERVAL_BYTES: u32 = 4096;
const DEFAULT_SEGMENT_MS: i64 = 7 * 24 * HOUR_MS;
const DEFAULT_RETENTION_MS: i64 = 7 * 24 * HOUR_MS;
/// 1 MiB plus the 12-byte log overhead (offset and size) of one batch.
const DEFAULT_MAX_MESSAGE_BYTES: i32 = (1 << 20) + 12;
const DEFAULT_TIMESTAMP_AFTER_MAX_MS: i64 = HOUR_MS;
const DEFAULT_FILE_DELETE_DELAY_MS: i64 = 60_000;
const DEFAULT_PRODUCER_ID_EXPIRATION_MS: i64 = 24 * HOUR_MS;

const MINUTE_MS: i64 = 60_000;
const HOUR_MS: i64 = 60 * MINUTE_MS;

/// Kafka's smallest `segment.bytes` before 4.0 (the legacy v0 record overhead).
const MIN_SEGMENT_BYTES: i64 = 14;
/// Two time-index entries of 12 bytes (8-byte timestamp + 4-byte relative offset): the time
/// index keeps its last slot for the entry written on roll, so with one slot it is full before
/// its first append and the log can take none.
const MIN_SEGMENT_INDEX_BYTES: i64 = 24;
const I32_MAX: i64 = i32::MAX as i64;

// Topic config names.
const SEGMENT_BYTES: &str = "segment.bytes";
const SEGMENT_INDEX_BYTES: &str = "segment.index.bytes";
const INDEX_INTERVAL_BYTES: &str = "index.interval.bytes";
const SEGMENT_MS: &str = "segment.ms";
const SEGMENT_JITTER_MS: &str = "segment.jitter.ms";
const RETENTION_BYTES: &str = "retention.bytes";
const RETENTION_MS: &str = "retention.ms";
const MAX_MESSAGE_BYTES: &str = "max.message.bytes";
const TIMESTAMP_TYPE: &str = "message.timestamp.type";
const TIMESTAMP_BEFORE_MAX_MS: &str = "message.timestamp.before.max.ms";
const TIMESTAMP_AFTER_MAX_MS: &str = "message.timestamp.after.max.ms";
const COMPRESSION_TYPE: &str = "compression.type";
const CLEANUP_POLICY: &str = "cleanup.policy";
const FLUSH_MESSAGES: &str = "flush.messages";
const FLUSH_MS: &str = "flush.ms";
const FILE_DELETE_DELAY_MS: &str = "file.delete.delay.ms";
const PRODUCER_ID_EXPIRATION_MS: &str = "producer.id.expiration.ms";

/// The topic config name `key` spells, if it is one (the `&'static` form kept in
/// [`LogConfig::overrides`]).
fn topic_config_name(key: &str) -> Option<&'static str> {
    [
        SEGMENT_BYTES,
        SEGMENT_INDEX_BYTES,
        INDEX_INTERVAL_BYTES,
        SEGMENT_MS,
        SEGMENT_JITTER_MS,
        RETENTION_BYTES,
        RETENTION_MS,
        MAX_MESSAGE_BYTES,
        TIMESTAMP_TYPE,
        TIMESTAMP_BEFORE_MAX_MS,
        TIMESTAMP_AFTER_MAX_MS,
        COMPRESSION_TYPE,
        CLEANUP_POLICY,
        FLUSH_MESSAGES,
        FLUSH_MS,
        FILE_DELETE_DELAY_MS,
        PRODUCER_ID_EXPIRATION_MS,
    ]
    .into_iter()
    .find(|n| *n == key)
}

/// An inclusive range check.
fn check_range(key: &str, value: i64, min: i64, max: i64) -> Result<(), ConfigError> {
    if (min..=max).contains(&value) {
        return Ok(());
    }
    Err(invalid(
        key,
        value,
        InvalidReason::OutOfRange {
            found: value,
            min,
            max,
            why: None,
        },
    ))
}

fn invalid(key: &str, value: impl ToString, reason: InvalidReason) -> ConfigError {
    ConfigError::InvalidValue {
        key: key.to_owned(),
        value: value.to_string(),
        reason,
    }
}

/// Parses a Kafka `INT` value (trimmed, decimal, 32-bit) and checks `min ..= max`.
fn parse_int(key: &str, value: &str, min: i64, max: i64) -> Result<i64, ConfigError> {
    let n: i32 = value
        .trim()
        .parse()
        .map_err(|_| invalid(key, value, InvalidReason::NotANumber(NumberType::Int)))?;
    range_of_parsed(key, value, i64::from(n), min, max)
}

/// Parses a Kafka `LONG` value (trimmed, decimal, 64-bit) and checks `min ..= max`.
fn parse_long(key: &str, value: &str, min: i64, max: i64) -> Result<i64, ConfigError> {
    let n: i64 = value
        .trim()
        .parse()
        .map_err(|_| invalid(key, value, InvalidReason::NotANumber(NumberType::Long)))?;
    range_of_parsed(key, value, n, min, max)
}

/// Range check that reports the value as the caller gave it.
fn range_of_parsed(key: &str, value: &str, n: i64, min: i64, max: i64) -> Result<i64, ConfigError> {
    check_range(key, n, min, max)
        .map(|()| n)
        .map_err(|e| with_value(e, value))
}

/// Values of a precedence family seen while applying pairs (`.ms` beats `.minutes` beats
/// `.hours`), resolved once every pair was read.
#[derive(Default)]
struct Pending {
    segment_ms: Option<i64>,
    roll_hours: Option<i64>,
    jitter_ms: Option<i64>,
    jitter_hours: Option<i64>,
    retention_ms: Option<i64>,
    retention_minutes: Option<i64>,
    retention_hours: Option<i64>,
    flush_ms: Option<i64>,
    flush_scheduler_ms: Option<i64>,
}

impl LogConfig {
    /// The topic config names mirrorlog implements, sorted; the keys
    /// [`LogConfig::to_kafka_pairs`] returns, in this order.
    pub const SUPPORTED_TOPIC_KEYS: &'static [&'static str] = &[
        CLEANUP_POLICY,
        COMPRESSION_TYPE,
        FILE_DELETE_DELAY_MS,
        FLUSH_MESSAGES,
        FLUSH_MS,
        INDEX_INTERVAL_BYTES,
        MAX_MESSAGE_BYTES,
        TIMESTAMP_AFTER_MAX_MS,
        TIMESTAMP_BEFORE_MAX_MS,
        TIMESTAMP_TYPE,
        RETENTION_BYTES,
        RETENTION_MS,
        SEGMENT_BYTES,
        SEGMENT_INDEX_BYTES,
        SEGMENT_JITTER_MS,
        SEGMENT_MS,
    ];

    /// Kafka topic config names (3.x and 4.x) that mirrorlog does not implement: giving one to
    /// [`LogConfig::with_overrides`] is [`ConfigError::Unsupported`], not
    /// [`ConfigError::UnknownKey`].
    pub const UNSUPPORTED_KAFKA_TOPIC_KEYS: &'static [&'static str] = &[
        "compression.gzip.level",
        "compression.lz4.level",
        "compression.zstd.level",
        "delete.retention.ms",
        "follower.replication.throttled.replicas",
        "leader.replication.throttled.replicas",
        "local.retention.bytes",
        "local.retention.ms",
        "max.compaction.lag.ms",
        "message.downconversion.enable",
        "message.format.version",
        "message.timestamp.difference.max.ms",
        "min.cleanable.dirty.ratio",
        "min.compaction.lag.ms",
        "min.insync.replicas",
        "preallocate",
        "remote.log.copy.disable",
        "remote.log.delete.on.disable",
        "remote.storage.enable",
        "unclean.leader.election.enable",
    ];

    /// Checks every field against its valid range (module docs).
    ///
    /// # Errors
    /// [`ConfigError::InvalidValue`] for the first field out of its range, naming the Kafka topic
    /// key, the value and the range.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let s = &self.segment;
        check_range(
            SEGMENT_BYTES,
            i64::from(s.segment_bytes_max),
            MIN_SEGMENT_BYTES,
            I32_MAX,
        )?;
        check_index_bytes(SEGMENT_INDEX_BYTES, i64::from(s.index_bytes_max))?;
        check_range(
            INDEX_INTERVAL_BYTES,
            i64::from(s.index_interval_bytes),
            0,
            I32_MAX,
        )?;
        check_range(SEGMENT_MS, s.segment_ms, 1, i64::MAX)?;
        if !(0..s.segment_ms).contains(&s.roll_jitter_ms) {
            return Err(invalid(
                "segment.roll_jitter_ms",
                s.roll_jitter_ms,
                InvalidReason::Other(format!(
                    "the per-segment jitter must lie in 0..{} (segment.ms); leave it 0 in a \
                     LogConfig, the log draws it from segment.jitter.ms",
                    s.segment_ms
                )),
            ));
        }
        check_range(SEGMENT_JITTER_MS, self.segment_jitter_ms, 0, i64::MAX)?;
        // retention.bytes: any value.
        check_range(RETENTION_MS, self.retention_ms, -1, i64::MAX)?;
        check_range(
            MAX_MESSAGE_BYTES,
            i64::from(self.max_message_bytes),
            0,
            I32_MAX,
        )?;
        check_range(
            TIMESTAMP_BEFORE_MAX_MS,
            self.timestamp_before_max_ms,
            0,
            i64::MAX,
        )?;
        check_range(
            TIMESTAMP_AFTER_MAX_MS,
            self.timestamp_after_max_ms,
            0,
            i64::MAX,
        )?;
        check_range(FLUSH_MESSAGES, self.flush_messages, 1, i64::MAX)?;
        check_range(FLUSH_MS, self.flush_ms, 0, i64::MAX)?;
        check_range(FILE_DELETE_DELAY_MS, self.file_delete_delay_ms, 0, i64::MAX)?;
        check_range(
            PRODUCER_ID_EXPIRATION_MS,
            self.producer_id_expiration_ms,
            1,
            I32_MAX,
        )?;
        debug_assert!(
            self.segment.validate().is_ok(),
            "LogConfig::validate accepted a SegmentConfig its own validate rejects"
        );
        Ok(())
    }

    /// This configuration with `pairs` applied on top, then validated: how a broker's defaults
    /// are built from `server.properties` and how a topic's overrides apply over them.
    ///
    /// Keys are Kafka topic config names or the broker (`server.properties`) names that map to
    /// them: `log.segment.bytes`, `log.index.size.max.bytes`, `log.index.interval.bytes`,
    /// `log.roll.ms`/`.hours`, `log.roll.jitter.ms`/`.hours`, `log.retention.ms`/`.minutes`/
    /// `.hours`, `log.retention.bytes`, `message.max.bytes`, `log.message.timestamp.type`,
    /// `log.message.timestamp.before.max.ms`/`.after.max.ms`, `compression.type`,
    /// `log.cleanup.policy`, `log.flush.interval.messages`, `log.flush.interval.ms`,
    /// `log.flush.scheduler.interval.ms`, `log.segment.delete.delay.ms` and
    /// `producer.id.expiration.ms` (module docs: table and precedence rules). A key given twice
    /// keeps its last value.
    ///
    /// # Errors
    /// [`ConfigError::UnknownKey`] for a key mirrorlog does not know,
    /// [`ConfigError::Unsupported`] for a Kafka topic config or value it does not implement
    /// (`cleanup.policy=compact`), [`ConfigError::InvalidValue`] for a malformed or out-of-range
    /// value (naming the key as given). `self` is unchanged either way.
    pub fn with_overrides<K, V>(
        &self,
        pairs: impl IntoIterator<Item = (K, V)>,
    ) -> Result<LogConfig, ConfigError>
    where
        K: AsRef<str>,
        V: AsRef<str>,
    {
        let mut cfg = self.clone();
        let mut pending = Pending::default();
        for (key, value) in pairs {
            cfg.apply(key.as_ref(), value.as_ref(), &mut pending)?;
        }
        if let Some(ms) = pending
            .segment_ms
            .or(pending.roll_hours.map(|h| h * HOUR_MS))
        {
            cfg.segment.segment_ms = ms;
        }
        if let Some(ms) = pending
            .jitter_ms
            .or(pending.jitter_hours.map(|h| h * HOUR_MS))
        {
            cfg.segment_jitter_ms = ms;
        }
        if let Some(ms) = pending.retention_ms.or(pending
            .retention_minutes
            .map(|m| m * MINUTE_MS)
            .or(pending.retention_hours.map(|h| h * HOUR_MS))
            .map(|ms| ms.max(-1)))
        {
            cfg.retention_ms = ms;
        }
        if let Some(ms) = pending.flush_ms.or(pending.flush_scheduler_ms) {
            cfg.flush_ms = ms;
        }
        cfg.validate()?;
        Ok(cfg)
    }

    /// [`with_overrides`](Self::with_overrides) for a topic's own settings: every topic config
    /// name among `pairs` is also recorded in [`overrides`](Self::overrides) (broker key
    /// spellings such as `log.retention.hours` are applied but not recorded).
    ///
    /// # Errors
    /// As [`with_overrides`](Self::with_overrides).
    pub fn with_topic_overrides<K, V>(
        &self,
        pairs: impl IntoIterator<Item = (K, V)>,
    ) -> Result<LogConfig, ConfigError>
    where
        K: AsRef<str>,
        V: AsRef<str>,
    {
        let pairs: Vec<(K, V)> = pairs.into_iter().collect();
        let mut cfg = self.with_overrides(pairs.iter().map(|(k, v)| (k.as_ref(), v.as_ref())))?;
        for (k, _) in &pairs {
            if let Some(name) = topic_config_name(k.as_ref()) {
                cfg.overrides.insert(name);
            }
        }
        Ok(cfg)
    }

    /// This config keeping every record whatever the broker defaults become: `retention.ms`
    /// and `retention.bytes` −1, recorded as the topic's own settings (so a later
    /// `log.retention.*` change cannot reach it) — what
    /// [`LogManager::keep_every_record`](crate::manager::LogManager::keep_every_record) makes of
    /// a partition's config. An internal topic's partition created with it needs no second
    /// `topic.config` write (and its two syncs) when its owner pins it.
    ///
    /// # Errors
    /// As [`with_overrides`](Self::with_overrides).
    pub fn keeping_every_record(&self) -> Result<LogConfig, ConfigError> {
        self.with_topic_overrides([("retention.ms", "-1"), ("retention.bytes", "-1")])
    }

    /// Whether `name` (a topic config name) is this topic's own setting: recorded as an
    /// override, or with a value other than `defaults`' (Kafka's `DYNAMIC_TOPIC_CONFIG`).
    pub fn is_topic_override(&self, name: &str, defaults: &LogConfig) -> bool {
        if self.overrides.contains(name) {
            return true;
        }
        let mine = self.to_kafka_pairs().into_iter().find(|(k, _)| *k == name);
        let theirs = defaults
            .to_kafka_pairs()
            .into_iter()
            .find(|(k, _)| *k == name);
        mine.is_some() && mine != theirs
    }

    /// Applies one pair; precedence families go to `pending`.
    fn apply(&mut self, key: &str, value: &str, pending: &mut Pending) -> Result<(), ConfigError> {
        match key {
            SEGMENT_BYTES | "log.segment.bytes" => {
                self.segment.segment_bytes_max =
                    to_u32(parse_int(key, value, MIN_SEGMENT_BYTES, I32_MAX)?);
            }
            SEGMENT_INDEX_BYTES | "log.index.size.max.bytes" => {
                let n = parse_int(key, value, i64::from(i32::MIN), I32_MAX)?;
                check_index_bytes(key, n).map_err(|e| with_value(e, value))?;
                self.segment.index_bytes_max = to_u32(n);
            }
            INDEX_INTERVAL_BYTES | "log.index.interval.bytes" => {
                self.segment.index_interval_bytes = to_u32(parse_int(key, value, 0, I32_MAX)?);
            }
            SEGMENT_MS | "log.roll.ms" => {
                pending.segment_ms = Some(parse_long(key, value, 1, i64::MAX)?);
            }
            "log.roll.hours" => pending.roll_hours = Some(parse_int(key, value, 1, I32_MAX)?),
            SEGMENT_JITTER_MS | "log.roll.jitter.ms" => {
                pending.jitter_ms = Some(parse_long(key, value, 0, i64::MAX)?);
            }
            "log.roll.jitter.hours" => {
                pending.jitter_hours = Some(parse_int(key, value, 0, I32_MAX)?);
            }
            RETENTION_BYTES | "log.retention.bytes" => {
                self.retention_bytes = parse_long(key, value, i64::MIN, i64::MAX)?;
            }
            RETENTION_MS => pending.retention_ms = Some(parse_long(key, value, -1, i64::MAX)?),
            "log.retention.ms" => {
                pending.retention_ms = Some(parse_long(key, value, i64::MIN, i64::MAX)?.max(-1));
            }
            "log.retention.minutes" => {
                pending.retention_minutes = Some(parse_int(key, value, i64::MIN, i64::MAX)?);
            }
            "log.retention.hours" => {
                pending.retention_hours = Some(parse_int(key, value, i64::MIN, i64::MAX)?);
            }
            MAX_MESSAGE_BYTES | "message.max.bytes" => {
                self.max_message_bytes = to_i32(parse_int(key, value, 0, I32_MAX)?);
            }
            TIMESTAMP_TYPE | "log.message.timestamp.type" => {
                self.timestamp_type = match value.trim() {
                    "CreateTime" => TimestampType::CreateTime,
                    "LogAppendTime" => TimestampType::LogAppendTime,
                    _ => {
                        return Err(invalid(
                            key,
                            value,
                            InvalidReason::NotOneOf(TIMESTAMP_TYPE_NAMES),
                        ));
                    }
                };
            }
            TIMESTAMP_BEFORE_MAX_MS | "log.message.timestamp.before.max.ms" => {
                self.timestamp_before_max_ms = parse_long(key, value, 0, i64::MAX)?;
            }
            TIMESTAMP_AFTER_MAX_MS | "log.message.timestamp.after.max.ms" => {
                self.timestamp_after_max_ms = parse_long(key, value, 0, i64::MAX)?;
            }
            COMPRESSION_TYPE => {
                self.compression = CompressionConfig::from_name(value.trim()).ok_or_else(|| {
                    invalid(
                        key,
                        value,
                        InvalidReason::NotOneOf(CompressionConfig::NAMES),
                    )
                })?;
            }
            CLEANUP_POLICY | "log.cleanup.policy" => {
                self.cleanup_policy = parse_cleanup_policy(key, value)?;
            }
            FLUSH_MESSAGES | "log.flush.interval.messages" => {
                self.flush_messages = parse_long(key, value, 1, i64::MAX)?;
            }
            FLUSH_MS | "log.flush.interval.ms" => {
                pending.flush_ms = Some(parse_long(key, value, 0, i64::MAX)?);
            }
            "log.flush.scheduler.interval.ms" => {
                pending.flush_scheduler_ms = Some(parse_long(key, value, 0, i64::MAX)?);
            }
            FILE_DELETE_DELAY_MS | "log.segment.delete.delay.ms" => {
                self.file_delete_delay_ms = parse_long(key, value, 0, i64::MAX)?;
            }
            PRODUCER_ID_EXPIRATION_MS => {
                self.producer_id_expiration_ms = parse_int(key, value, 1, I32_MAX)?;
            }
            _ if Self::UNSUPPORTED_KAFKA_TOPIC_KEYS.contains(&key) => {
                return Err(ConfigError::Unsupported {
                    key: key.to_owned(),
                    value: value.to_owned(),
                    reason: "a Kafka topic config mirrorlog does not implement".to_owned(),
                });
            }
            _ => {
                return Err(ConfigError::UnknownKey {
                    key: key.to_owned(),
                });
            }
        }
        Ok(())
    }

    /// Every topic config as Kafka names and formats it, in [`LogConfig::SUPPORTED_TOPIC_KEYS`]
    /// order (what DescribeConfigs reports). `producer.id.expiration.ms` (a broker config) and
    /// `read_only` (not a config) are not included; everything else round-trips through
    /// [`LogConfig::with_overrides`].
    pub fn to_kafka_pairs(&self) -> Vec<(&'static str, String)> {
        let s = &self.segment;
        let pairs = vec![
            (CLEANUP_POLICY, self.cleanup_policy.name().to_owned()),
            (COMPRESSION_TYPE, self.compression.name().to_owned()),
            (FILE_DELETE_DELAY_MS, self.file_delete_delay_ms.to_string()),
            (FLUSH_MESSAGES, self.flush_messages.to_string()),
            (FLUSH_MS, self.flush_ms.to_string()),
            (INDEX_INTERVAL_BYTES, s.index_interval_bytes.to_string()),
            (MAX_MESSAGE_BYTES, self.max_message_bytes.to_string()),
            (
                TIMESTAMP_AFTER_MAX_MS,
                self.timestamp_after_max_ms.to_string(),
            ),
            (
                TIMESTAMP_BEFORE_MAX_MS,
                self.timestamp_before_max_ms.to_string(),
            ),
            (
                TIMESTAMP_TYPE,
                timestamp_type_name(self.timestamp_type).to_owned(),
            ),
            (RETENTION_BYTES, self.retention_bytes.to_string()),
            (RETENTION_MS, self.retention_ms.to_string()),
            (SEGMENT_BYTES, s.segment_bytes_max.to_string()),
            (SEGMENT_INDEX_BYTES, s.index_bytes_max.to_string()),
            (SEGMENT_JITTER_MS, self.segment_jitter_ms.to_string()),
            (SEGMENT_MS, s.segment_ms.to_string()),
        ];
        debug_assert!(
            pairs
                .iter()
                .map(|(k, _)| *k)
                .eq(Self::SUPPORTED_TOPIC_KEYS.iter().copied())
        );
        pairs
    }

    /// The segment settings for a new segment, with its roll jitter drawn as Kafka draws it
    /// (`LogConfig.randomSegmentJitter`): 0 when `segment.jitter.ms` is 0, else
    /// `random % min(segment.jitter.ms, segment.ms)`, so always below `segment.ms`. `random` is
    /// the caller's random draw (the partition log's, reseedable for tests).
    pub fn segment_config_for_roll(&self, random: u64) -> SegmentConfig {
        let jitter_ms = if self.segment_jitter_ms <= 0 {
            0
        } else {
            let bound = self.segment_jitter_ms.min(self.segment.segment_ms);
            assert!(bound >= 1, "segment.ms must be validated before rolling");
            // `bound` is positive, so the remainder fits back in i64.
            (random % bound as u64) as i64
        };
        SegmentConfig {
            roll_jitter_ms: jitter_ms,
            ..self.segment
        }
    }
}

/// `segment.index.bytes`: Kafka's ≥ 4, tightened to ≥ 24 with the reason.
fn check_index_bytes(key: &str, n: i64) -> Result<(), ConfigError> {
    if (MIN_SEGMENT_INDEX_BYTES..=I32_MAX).contains(&n) {
        return Ok(());
    }
    let why = (4..MIN_SEGMENT_INDEX_BYTES).contains(&n).then_some(
        "Kafka accepts 4 but a time index needs room for two 12-byte entries, one kept for \
             the entry written on roll",
    );
    Err(invalid(
        key,
        n,
        InvalidReason::OutOfRange {
            found: n,
            min: MIN_SEGMENT_INDEX_BYTES,
            max: I32_MAX,
            why,
        },
    ))
}

/// Replaces an `InvalidValue`'s value with the value as the caller gave it.
fn with_value(e: ConfigError, value: &str) -> ConfigError {
    match e {
        ConfigError::InvalidValue { key, reason, .. } => ConfigError::InvalidValue {
            key,
            value: value.to_owned(),
            reason,
        },
        other => other,
    }
}

/// `cleanup.policy`: a comma-separated list drawn from `delete` and `compact`; the empty list
/// (Kafka 4.2's infinite retention) is [`CleanupPolicy::Retain`].
fn parse_cleanup_policy(key: &str, value: &str) -> Result<CleanupPolicy, ConfigError> {
    if value.trim().is_empty() {
        return Ok(CleanupPolicy::Retain);
    }
    let mut delete = false;
    let mut compact = false;
    for item in value.split(',').map(str::trim) {
        match item {
            "delete" => delete = true,
            "compact" => compact = true,
            _ => {
                return Err(invalid(
                    key,
                    value,
                    InvalidReason::NotAListOf(CLEANUP_POLICY_NAMES),
                ));
            }
        }
    }
    if compact {
        return Err(ConfigError::Unsupported {
            key: key.to_owned(),
            value: value.to_owned(),
            reason: "mirrorlog does not implement log compaction; only `delete` is supported"
                .to_owned(),
        });
    }
    debug_assert!(delete, "a split yields at least one item");
    Ok(CleanupPolicy::Delete)
}

/// A value already checked to lie in 0 ..= i32::MAX.
fn to_u32(n: i64) -> u32 {
    u32::try_from(n).expect("range-checked to 0..=i32::MAX")
}

/// A value already checked to lie in i32's range.
fn to_i32(n: i64) -> i32 {
    i32::try_from(n).expect("range-checked to i32")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn over(pairs: &[(&str, &str)]) -> Result<LogConfig, ConfigError> {
        LogConfig::default().with_overrides(pairs.iter().copied())
    }

    #[test]
    fn partitions_share_one_override_set_and_a_change_copies_it_first() {
        let a = LogConfig::default()
            .with_topic_overrides([("retention.ms", "1000"), ("segment.bytes", "1048576")])
            .unwrap();
        let mut b = a.clone();
        assert!(
            std::sync::Arc::ptr_eq(&a.overrides.0, &b.overrides.0),
            "a clone shares the set"
        );
        // Changes that change nothing keep sharing it.
        assert!(!b.overrides.insert("retention.ms"));
        b.overrides.retain(|_| true);
        b.overrides.extend(["segment.bytes"]);
        assert!(std::sync::Arc::ptr_eq(&a.overrides.0, &b.overrides.0));
        // A change copies: the other config keeps its own.
        b.overrides.retain(|k| *k != "retention.ms");
        assert!(b.overrides.insert("max.message.bytes"));
        let names = |c: &LogConfig| c.overrides.iter().copied().collect::<Vec<_>>();
        assert_eq!(names(&a), ["retention.ms", "segment.bytes"]);
        assert_eq!(names(&b), ["max.message.bytes", "segment.bytes"]);
        assert!(a.is_topic_override("retention.ms", &LogConfig::default()));
        let c: TopicOverrides = ["segment.bytes", "max.message.bytes"].into_iter().collect();
        assert_eq!(c, b.overrides, "equality is the names'");
    }

    fn err_text(pairs: &[(&str, &str)]) -> String {
        over(pairs).unwrap_err().to_string()
    }

    #[test]
    fn defaults_match_kafka() {
        let c = LogConfig::default();
        assert_eq!(c.segment.segment_bytes_max, 1_073_741_824);
        assert_eq!(c.segment.index_bytes_max, 10_485_760);
        assert_eq!(c.segment.index_interval_bytes, 4096);
        assert_eq!(c.segment.segment_ms, 604_800_000);
        assert_eq!(c.segment.roll_jitter_ms, 0);
        assert_eq!(c.segment_jitter_ms, 0);
        assert_eq!(c.retention_bytes, -1);
        assert_eq!(c.retention_ms, 604_800_000);
        assert_eq!(c.max_message_bytes, 1_048_588);
        assert_eq!(c.timestamp_type, TimestampType::CreateTime);
        assert_eq!(c.timestamp_before_max_ms, i64::MAX);
        assert_eq!(c.timestamp_after_max_ms, 3_600_000);
        assert_eq!(c.compression, CompressionConfig::Producer);
        assert_eq!(c.cleanup_policy, CleanupPolicy::Delete);
        assert_eq!(c.flush_messages, i64::MAX);
        assert_eq!(c.flush_ms, i64::MAX);
        assert_eq!(c.file_delete_delay_ms, 60_000);
        assert_eq!(c.producer_id_expiration_ms, 86_400_000);
        assert!(!c.read_only);
        c.validate().unwrap();
    }

    #[test]
    fn default_segment_settings_agree_with_the_segment_crate() {
        assert_eq!(LogConfig::default().segment, SegmentConfig::default());
    }

    #[test]
    fn default_pairs_are_kafkas_describe_configs_defaults() {
        let pairs = LogConfig::default().to_kafka_pairs();
        let get = |k: &str| pairs.iter().find(|(key, _)| *key == k).unwrap().1.clone();
        assert_eq!(get("cleanup.policy"), "delete");
        assert_eq!(get("compression.type"), "producer");
        assert_eq!(get("message.timestamp.type"), "CreateTime");
        assert_eq!(get("max.message.bytes"), "1048588");
        assert_eq!(get("flush.messages"), "9223372036854775807");
        assert_eq!(pairs.len(), LogConfig::SUPPORTED_TOPIC_KEYS.len());
    }

    #[test]
    fn supported_keys_are_sorted_and_disjoint_from_unsupported_ones() {
        let keys = LogConfig::SUPPORTED_TOPIC_KEYS;
        assert!(keys.windows(2).all(|w| w[0] < w[1]));
        let unsupported = LogConfig::UNSUPPORTED_KAFKA_TOPIC_KEYS;
        assert!(unsupported.windows(2).all(|w| w[0] < w[1]));
        assert!(keys.iter().all(|k| !unsupported.contains(k)));
    }

    /// Each (key, out-of-range value) pair must be rejected naming the key and the value.
    #[test]
    fn each_out_of_range_value_is_rejected_with_the_key_in_the_message() {
        let cases: &[(&str, &str)] = &[
            ("segment.bytes", "13"),
            ("segment.bytes", "-1"),
            ("segment.bytes", "2147483648"),
            ("log.segment.bytes", "0"),
            ("segment.index.bytes", "3"),
            ("segment.index.bytes", "11"),
            ("log.index.size.max.bytes", "8"),
            ("index.interval.bytes", "-1"),
            ("log.index.interval.bytes", "-5"),
            ("segment.ms", "0"),
            ("log.roll.ms", "-1"),
            ("log.roll.hours", "0"),
            ("segment.jitter.ms", "-1"),
            ("log.roll.jitter.ms", "-1"),
            ("log.roll.jitter.hours", "-1"),
            ("retention.ms", "-2"),
            ("max.message.bytes", "-1"),
            ("message.max.bytes", "-1"),
            ("max.message.bytes", "2147483648"),
            ("message.timestamp.before.max.ms", "-1"),
            ("message.timestamp.after.max.ms", "-1"),
            ("log.message.timestamp.after.max.ms", "-1"),
            ("flush.messages", "0"),
            ("log.flush.interval.messages", "0"),
            ("flush.ms", "-1"),
            ("log.flush.interval.ms", "-1"),
            ("file.delete.delay.ms", "-1"),
            ("log.segment.delete.delay.ms", "-1"),
            ("producer.id.expiration.ms", "0"),
            ("producer.id.expiration.ms", "2147483648"),
        ];
        for (key, value) in cases {
            let e = over(&[(key, value)]).unwrap_err();
            assert!(
                matches!(&e, ConfigError::InvalidValue { key: k, value: v, .. } if k == key && v == value),
                "{key}={value}: {e:?}"
            );
            let text = e.to_string();
            assert!(text.contains(key) && text.contains(value), "{text}");
        }
    }

    #[test]
    fn validate_names_the_topic_key_value_and_range() {
        let mut c = LogConfig::default();
        c.segment.segment_bytes_max = 10;
        let text = c.validate().unwrap_err().to_string();
        assert!(
            text.contains("segment.bytes") && text.contains("10") && text.contains("14..="),
            "{text}"
        );

        let c = LogConfig {
            retention_ms: -7,
            ..LogConfig::default()
        };
        let text = c.validate().unwrap_err().to_string();
        assert!(
            text.contains("retention.ms") && text.contains("-7") && text.contains("at least -1"),
            "{text}"
        );

        let mut c = LogConfig::default();
        c.segment.index_bytes_max = 8;
        let text = c.validate().unwrap_err().to_string();
        assert!(text.contains("two 12-byte entries"), "{text}");

        let c = LogConfig {
            flush_messages: 0,
            ..LogConfig::default()
        };
        assert!(
            c.validate()
                .unwrap_err()
                .to_string()
                .contains("flush.messages")
        );

        let mut c = LogConfig::default();
        c.segment.roll_jitter_ms = c.segment.segment_ms;
        assert!(c.validate().is_err());
    }

    #[test]
    fn the_smallest_and_largest_valid_values_are_accepted() {
        let c = over(&[
            ("segment.bytes", "14"),
            ("segment.index.bytes", "24"),
            ("index.interval.bytes", "0"),
            ("segment.ms", "1"),
            ("retention.ms", "-1"),
            ("retention.bytes", "-9223372036854775808"),
            ("max.message.bytes", "0"),
            ("message.timestamp.before.max.ms", "0"),
            ("message.timestamp.after.max.ms", "9223372036854775807"),
            ("flush.messages", "1"),
            ("flush.ms", "0"),
            ("file.delete.delay.ms", "0"),
            ("producer.id.expiration.ms", "1"),
        ])
        .unwrap();
        assert_eq!(c.segment.segment_bytes_max, 14);
        assert_eq!(c.retention_bytes, i64::MIN);
        let c = over(&[
            ("segment.bytes", "2147483647"),
            ("segment.index.bytes", "2147483647"),
        ])
        .unwrap();
        assert_eq!(c.segment.segment_bytes_max, i32::MAX as u32);
    }

    #[test]
    fn malformed_values_are_rejected_with_key_and_value() {
        for (key, value) in [
            ("segment.bytes", "1GiB"),
            ("segment.bytes", "1.5"),
            ("retention.ms", ""),
            ("retention.bytes", "9223372036854775808"),
            ("message.timestamp.type", "createtime"),
            ("compression.type", "GZIP"),
            ("compression.type", "brotli"),
            ("cleanup.policy", "forever"),
            ("cleanup.policy", "delete,,delete"),
        ] {
            let text = err_text(&[(key, value)]);
            assert!(
                text.contains(&format!("`{key}`")) && text.contains(&format!("`{value}`")),
                "{text}"
            );
        }
    }

    /// The reason is data a caller can word its own way (the broker answers Kafka's words).
    #[test]
    fn invalid_values_carry_their_reason_as_data() {
        let reason = |key: &str, value: &str| match over(&[(key, value)]).unwrap_err() {
            ConfigError::InvalidValue { reason, .. } => reason,
            other => panic!("{key}={value}: {other:?}"),
        };
        let range = |found, min, max| InvalidReason::OutOfRange {
            found,
            min,
            max,
            why: None,
        };
        assert_eq!(reason("segment.ms", " 0 "), range(0, 1, i64::MAX));
        assert_eq!(reason("segment.bytes", "13"), range(13, 14, I32_MAX));
        assert_eq!(reason("retention.ms", "-2"), range(-2, -1, i64::MAX));
        assert!(matches!(
            reason("segment.index.bytes", "8"),
            InvalidReason::OutOfRange { found: 8, min: 24, max: I32_MAX, why: Some(why) }
                if why.contains("two 12-byte entries")
        ));
        assert_eq!(
            reason("max.message.bytes", "2147483648"),
            InvalidReason::NotANumber(NumberType::Int)
        );
        assert_eq!(
            reason("flush.ms", "1.5"),
            InvalidReason::NotANumber(NumberType::Long)
        );
        assert_eq!(
            reason("message.timestamp.type", "createtime"),
            InvalidReason::NotOneOf(&["CreateTime", "LogAppendTime"])
        );
        assert_eq!(
            reason("compression.type", "brotli"),
            InvalidReason::NotOneOf(CompressionConfig::NAMES)
        );
        assert_eq!(
            reason("cleanup.policy", "forever"),
            InvalidReason::NotAListOf(&["compact", "delete"])
        );
        // The engine's own words stay readable for embedders.
        assert_eq!(
            err_text(&[("segment.ms", "0")]),
            "invalid value `0` for `segment.ms`: must be at least 1"
        );
        assert_eq!(
            err_text(&[("compression.type", "brotli")]),
            "invalid value `brotli` for `compression.type`: expected one of `uncompressed`, \
             `zstd`, `lz4`, `snappy`, `gzip`, `producer`"
        );
    }

    #[test]
    fn compression_names_are_all_in_order() {
        let names: Vec<&str> = CompressionConfig::ALL.iter().map(|c| c.name()).collect();
        assert_eq!(names, CompressionConfig::NAMES);
    }

    #[test]
    fn values_are_trimmed_as_kafka_trims_them() {
        let c = over(&[("segment.ms", " 1000 "), ("compression.type", " zstd")]).unwrap();
        assert_eq!(c.segment.segment_ms, 1000);
        assert_eq!(c.compression, CompressionConfig::Zstd);
    }

    #[test]
    fn unknown_keys_are_rejected_naming_the_key() {
        let e = over(&[("segment.bytes", "1048576"), ("segmnet.ms", "1")]).unwrap_err();
        assert_eq!(
            e,
            ConfigError::UnknownKey {
                key: "segmnet.ms".into()
            }
        );
        assert!(e.to_string().contains("segmnet.ms"));
    }

    #[test]
    fn kafka_topic_configs_mirrorlog_lacks_are_unsupported_not_unknown() {
        let e = over(&[("min.insync.replicas", "2")]).unwrap_err();
        assert!(
            matches!(e, ConfigError::Unsupported { ref key, .. } if key == "min.insync.replicas")
        );
    }

    #[test]
    fn compaction_is_rejected_with_a_clear_error() {
        for value in ["compact", "compact,delete", "delete, compact"] {
            let e = over(&[("cleanup.policy", value)]).unwrap_err();
            assert!(
                matches!(&e, ConfigError::Unsupported { key, .. } if key == "cleanup.policy"),
                "{e:?}"
            );
            assert!(e.to_string().contains("compaction"), "{e}");
        }
        let e = over(&[("log.cleanup.policy", "compact")]).unwrap_err();
        assert!(e.to_string().contains("log.cleanup.policy"));
        assert_eq!(
            over(&[("cleanup.policy", "delete")])
                .unwrap()
                .cleanup_policy,
            CleanupPolicy::Delete
        );
    }

    #[test]
    fn broker_names_map_to_topic_configs() {
        let c = over(&[
            ("log.segment.bytes", "1048576"),
            ("log.index.size.max.bytes", "4096"),
            ("log.index.interval.bytes", "100"),
            ("log.roll.ms", "5000"),
            ("log.roll.jitter.ms", "7"),
            ("log.retention.bytes", "123456"),
            ("log.retention.ms", "99999"),
            ("message.max.bytes", "2000"),
            ("log.message.timestamp.type", "LogAppendTime"),
            ("log.message.timestamp.before.max.ms", "11"),
            ("log.message.timestamp.after.max.ms", "22"),
            ("compression.type", "lz4"),
            ("log.cleanup.policy", "delete"),
            ("log.flush.interval.messages", "1000"),
            ("log.flush.interval.ms", "250"),
            ("log.segment.delete.delay.ms", "0"),
            ("producer.id.expiration.ms", "1000"),
        ])
        .unwrap();
        assert_eq!(c.segment.segment_bytes_max, 1_048_576);
        assert_eq!(c.segment.index_bytes_max, 4096);
        assert_eq!(c.segment.index_interval_bytes, 100);
        assert_eq!(c.segment.segment_ms, 5000);
        assert_eq!(c.segment_jitter_ms, 7);
        assert_eq!(c.retention_bytes, 123_456);
        assert_eq!(c.retention_ms, 99_999);
        assert_eq!(c.max_message_bytes, 2000);
        assert_eq!(c.timestamp_type, TimestampType::LogAppendTime);
        assert_eq!(c.timestamp_before_max_ms, 11);
        assert_eq!(c.timestamp_after_max_ms, 22);
        assert_eq!(c.compression, CompressionConfig::Lz4);
        assert_eq!(c.flush_messages, 1000);
        assert_eq!(c.flush_ms, 250);
        assert_eq!(c.file_delete_delay_ms, 0);
        assert_eq!(c.producer_id_expiration_ms, 1000);
    }

    #[test]
    fn hours_and_minutes_convert_and_lose_to_milliseconds_whatever_the_order() {
        let c = over(&[("log.retention.hours", "2")]).unwrap();
        assert_eq!(c.retention_ms, 2 * 3_600_000);
        let c = over(&[("log.retention.minutes", "3"), ("log.retention.hours", "2")]).unwrap();
        assert_eq!(c.retention_ms, 3 * 60_000);
        let c = over(&[
            ("log.retention.ms", "5"),
            ("log.retention.minutes", "3"),
            ("log.retention.hours", "2"),
        ])
        .unwrap();
        assert_eq!(c.retention_ms, 5);
        let c = over(&[("log.roll.hours", "1"), ("segment.ms", "10")]).unwrap();
        assert_eq!(c.segment.segment_ms, 10);
        let c = over(&[("log.roll.hours", "3")]).unwrap();
        assert_eq!(c.segment.segment_ms, 3 * 3_600_000);
        let c = over(&[("log.roll.jitter.hours", "1")]).unwrap();
        assert_eq!(c.segment_jitter_ms, 3_600_000);
        let c = over(&[("log.flush.scheduler.interval.ms", "9")]).unwrap();
        assert_eq!(c.flush_ms, 9);
        let c = over(&[("flush.ms", "8"), ("log.flush.scheduler.interval.ms", "9")]).unwrap();
        assert_eq!(c.flush_ms, 8);
    }

    #[test]
    fn a_negative_broker_retention_means_unlimited() {
        assert_eq!(
            over(&[("log.retention.hours", "-1")]).unwrap().retention_ms,
            -1
        );
        assert_eq!(
            over(&[("log.retention.minutes", "-5")])
                .unwrap()
                .retention_ms,
            -1
        );
        assert_eq!(
            over(&[("log.retention.ms", "-100")]).unwrap().retention_ms,
            -1
        );
        assert!(over(&[("retention.ms", "-100")]).is_err());
    }

    #[test]
    fn a_key_given_twice_keeps_its_last_value() {
        let c = over(&[("retention.bytes", "1"), ("retention.bytes", "2")]).unwrap();
        assert_eq!(c.retention_bytes, 2);
    }

    #[test]
    fn topic_overrides_apply_over_broker_defaults() {
        let broker = over(&[("log.retention.hours", "1"), ("compression.type", "gzip")]).unwrap();
        let topic = broker
            .with_overrides([("retention.ms".to_string(), "10".to_string())])
            .unwrap();
        assert_eq!(topic.retention_ms, 10);
        assert_eq!(topic.compression, CompressionConfig::Gzip);
        assert_eq!(broker.retention_ms, 3_600_000, "the base is unchanged");
    }

    #[test]
    fn a_failed_override_leaves_the_base_unchanged() {
        let base = LogConfig::default();
        assert!(
            base.with_overrides([("segment.ms", "5"), ("segment.bytes", "1")])
                .is_err()
        );
        assert_eq!(base, LogConfig::default());
    }

    #[test]
    fn to_kafka_pairs_round_trips_through_with_overrides() {
        let custom = LogConfig {
            segment: SegmentConfig {
                segment_bytes_max: 1 << 20,
                index_bytes_max: 4096,
                index_interval_bytes: 0,
                segment_ms: 60_000,
                roll_jitter_ms: 0,
            },
            segment_jitter_ms: 1000,
            retention_bytes: 1 << 30,
            retention_ms: -1,
            max_message_bytes: 5_000_000,
            timestamp_type: TimestampType::LogAppendTime,
            timestamp_before_max_ms: 1,
            timestamp_after_max_ms: 2,
            compression: CompressionConfig::Snappy,
            cleanup_policy: CleanupPolicy::Delete,
            flush_messages: 1,
            flush_ms: 0,
            file_delete_delay_ms: 5,
            ..LogConfig::default()
        };
        custom.validate().unwrap();
        for original in [LogConfig::default(), custom] {
            let pairs = original.to_kafka_pairs();
            let back = LogConfig::default()
                .with_overrides(pairs.iter().map(|(k, v)| (*k, v.as_str())))
                .unwrap();
            assert_eq!(back, original);
        }
    }

    proptest::proptest! {
        #[test]
        fn any_valid_config_round_trips_through_kafka_pairs(
            segment_bytes_max in 14u32..=i32::MAX as u32,
            index_bytes_max in 24u32..=i32::MAX as u32,
            index_interval_bytes in 0u32..=i32::MAX as u32,
            segment_ms in 1i64..,
            segment_jitter_ms in 0i64..,
            retention_bytes in proptest::num::i64::ANY,
            retention_ms in -1i64..,
            max_message_bytes in 0i32..,
            log_append_time in proptest::bool::ANY,
            timestamp_before_max_ms in 0i64..,
            timestamp_after_max_ms in 0i64..,
            compression in 0usize..CompressionConfig::ALL.len(),
            flush_messages in 1i64..,
            flush_ms in 0i64..,
            file_delete_delay_ms in 0i64..,
        ) {
            let original = LogConfig {
                segment: SegmentConfig {
                    segment_bytes_max,
                    index_bytes_max,
                    index_interval_bytes,
                    segment_ms,
                    roll_jitter_ms: 0,
                },
                segment_jitter_ms,
                retention_bytes,
                retention_ms,
                max_message_bytes,
                timestamp_type: if log_append_time {
                    TimestampType::LogAppendTime
                } else {
                    TimestampType::CreateTime
                },
                timestamp_before_max_ms,
                timestamp_after_max_ms,
                compression: CompressionConfig::ALL[compression],
                cleanup_policy: CleanupPolicy::Delete,
                flush_messages,
                flush_ms,
                file_delete_delay_ms,
                ..LogConfig::default()
            };
            proptest::prop_assert!(original.validate().is_ok());
            let pairs = original.to_kafka_pairs();
            let back = LogConfig::default()
                .with_overrides(pairs.iter().map(|(k, v)| (*k, v.as_str())))
                .unwrap();
            proptest::prop_assert_eq!(back, original);
        }
    }

    #[test]
    fn every_compression_name_round_trips() {
        for c in CompressionConfig::ALL {
            assert_eq!(CompressionConfig::from_name(c.name()), Some(c));
            let cfg = over(&[("compression.type", c.name())]).unwrap();
            assert_eq!(cfg.compression, c);
        }
        assert_eq!(CompressionConfig::Producer.codec(), None);
        assert_eq!(
            CompressionConfig::Uncompressed.codec(),
            Some(Compression::None)
        );
        assert_eq!(CompressionConfig::Zstd.codec(), Some(Compression::Zstd));
    }

    #[test]
    fn roll_jitter_is_drawn_below_both_the_jitter_and_segment_ms() {
        let none = LogConfig::default();
        assert_eq!(none.segment_config_for_roll(u64::MAX).roll_jitter_ms, 0);
        let c = over(&[("segment.ms", "100"), ("segment.jitter.ms", "1000")]).unwrap();
        for r in [0, 1, 99, 100, 12345, u64::MAX] {
            let s = c.segment_config_for_roll(r);
            assert!((0..100).contains(&s.roll_jitter_ms));
            assert!(s.validate().is_ok());
        }
        let c = over(&[("segment.ms", "100000"), ("segment.jitter.ms", "10")]).unwrap();
        assert_eq!(c.segment_config_for_roll(25).roll_jitter_ms, 5);
    }
}
