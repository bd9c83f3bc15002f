//! The group coordinator's settings, named after Kafka's broker configs.

use crate::coordinators::{int_setting, long_setting, unsigned_int_setting};

/// Group coordinator settings. Every field gives its Kafka name, default and valid range;
/// [`GroupConfig::validate`] rejects what is out of range.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupConfig {
    /// `offsets.topic.num.partitions`: partitions of `__consumer_offsets`, one coordinator shard
    /// each. Default 8 (Kafka: 50). A single-node broker gains nothing from 50 shards, while each
    /// partition costs a directory, open segment and index files and its own fsync target; 8
    /// still lets unrelated groups commit in parallel. Range 1 ..= 1000. It can never change once
    /// the topic holds data: [`GroupCoordinator::open`](super::GroupCoordinator::open) refuses a
    /// different count, since groups would move to other partitions and lose their offsets.
    pub offsets_topic_partitions: i32,
    /// `offsets.topic.segment.bytes`: segment size of `__consumer_offsets`. Default 104857600
    /// (100 MiB, as Kafka); range 1 MiB ..= 1 GiB (Kafka: ≥ 1).
    pub offsets_topic_segment_bytes: u32,
    /// `group.min.session.timeout.ms`: the smallest session timeout a member may ask for.
    /// Default 6000; range 1 ..= `group_max_session_timeout_ms` (Kafka checks neither bound).
    pub group_min_session_timeout_ms: i32,
    /// `group.max.session.timeout.ms`: the largest session timeout a member may ask for.
    /// Default 1800000 (30 minutes); range `group_min_session_timeout_ms` ..= i32::MAX (Kafka
    /// checks no bound; below the minimum it would refuse every JoinGroup).
    pub group_max_session_timeout_ms: i32,
    /// `group.initial.rebalance.delay.ms`: how long the first rebalance of an empty group waits
    /// for more members (extended by the same delay, up to the rebalance timeout, while members
    /// keep arriving). Default 0 here so that a lone consumer starts at once (and tests stay
    /// fast); Kafka's default is 3000, which spares a group starting many consumers a rebalance
    /// per consumer — set it for production. Range 0 ..= i32::MAX (Kafka checks no bound).
    pub group_initial_rebalance_delay_ms: i32,
    /// `group.max.size`: the most members one group may have; a JoinGroup beyond it gets
    /// GROUP_MAX_SIZE_REACHED. Also bounds a group's members waiting for their member id
    /// (MEMBER_ID_REQUIRED). Default 10000 (Kafka: i32::MAX, i.e. unbounded; we keep every
    /// in-memory structure bounded); range 1 ..= 1000000 (Kafka: ≥ 1).
    pub group_max_size: i32,
    /// Kafka's `classicGroupNewMemberJoinTimeoutMs` (an internal constant there): how long a new
    /// member's first JoinGroup may stay parked before the member is dropped. Default 300000;
    /// range 1 ..= i32::MAX.
    pub group_new_member_join_timeout_ms: i32,
    /// `offsets.retention.minutes`: committed offsets of a group without members expire this long
    /// after the group became empty (offsets of a group that never had members: after their
    /// commit). Default 10080 (7 days); range 1 ..= i32::MAX.
    pub offsets_retention_minutes: i32,
    /// `offsets.retention.check.interval.ms`: how often [`tick`](super::GroupCoordinator::tick)
    /// looks for expired offsets and dead groups. Default 600000; range 1 ..= i64::MAX.
    pub offsets_retention_check_interval_ms: i64,
    /// `offset.metadata.max.bytes`: the largest metadata string a commit may carry
    /// (OFFSET_METADATA_TOO_LARGE beyond), counted as Kafka counts it despite the name: in
    /// UTF-16 code units (Java's `String.length()`), not bytes. Default 4096; range
    /// 0 ..= i32::MAX (Kafka checks no bound; a negative value there refuses every commit),
    /// though the record stores it with an `int16` length, so 32767 bytes is the effective
    /// ceiling.
    pub offset_metadata_max_bytes: i32,
    /// `offsets.load.buffer.size`: bytes read at a time while loading `__consumer_offsets`.
    /// Default 5242880; range 1 ..= i32::MAX.
    pub offsets_load_buffer_bytes: i32,
    /// mirrorlog's stand-in for log compaction, which the engine does not implement: once a
    /// `__consumer_offsets` partition holds this many records more than its live state (the
    /// latest offset of each group partition and each group's metadata), the live state is
    /// written again and the log start moves past the older records. Default 100000; range
    /// 1000 ..= i64::MAX.
    pub offsets_compaction_min_dirty_records: i64,
}

impl Default for GroupConfig {
    fn default() -> Self {
        GroupConfig {
            offsets_topic_partitions: 8,
            offsets_topic_segment_bytes: 100 * 1024 * 1024,
            group_min_session_timeout_ms: 6000,
            group_max_session_timeout_ms: 1_800_000,
            group_initial_rebalance_delay_ms: 0,
            group_max_size: 10_000,
            group_new_member_join_timeout_ms: 300_000,
            offsets_retention_minutes: 10_080,
            offsets_retention_check_interval_ms: 600_000,
            offset_metadata_max_bytes: 4096,
            offsets_load_buffer_bytes: 5 * 1024 * 1024,
            offsets_compaction_min_dirty_records: 100_000,
        }
    }
}

impl GroupConfig {
    /// Rejects out-of-range settings.
    ///
    /// # Errors
    /// A message naming the setting, its value and its range.
    pub fn validate(&self) -> Result<(), String> {
        fn check<T: PartialOrd + std::fmt::Display>(
            name: &str,
            v: T,
            lo: T,
            hi: T,
        ) -> Result<(), String> {
            if v < lo || v > hi {
                return Err(format!("{name}={v} is outside {lo} ..= {hi}"));
            }
            Ok(())
        }
        check(
            "offsets.topic.num.partitions",
            self.offsets_topic_partitions,
            1,
            1000,
        )?;
        check(
            "offsets.topic.segment.bytes",
            self.offsets_topic_segment_bytes,
            Self::OFFSETS_TOPIC_SEGMENT_BYTES_MIN,
            Self::OFFSETS_TOPIC_SEGMENT_BYTES_MAX,
        )?;
        check(
            "group.min.session.timeout.ms",
            self.group_min_session_timeout_ms,
            1,
            i32::MAX,
        )?;
        check(
            "group.max.session.timeout.ms",
            self.group_max_session_timeout_ms,
            self.group_min_session_timeout_ms,
            i32::MAX,
        )?;
        check(
            "group.initial.rebalance.delay.ms",
            self.group_initial_rebalance_delay_ms,
            0,
            i32::MAX,
        )?;
        check("group.max.size", self.group_max_size, 1, 1_000_000)?;
        check(
            "group new member join timeout ms",
            self.group_new_member_join_timeout_ms,
            1,
            i32::MAX,
        )?;
        check(
            "offsets.retention.minutes",
            self.offsets_retention_minutes,
            1,
            i32::MAX,
        )?;
        check(
            "offsets.retention.check.interval.ms",
            self.offsets_retention_check_interval_ms,
            1,
            i64::MAX,
        )?;
        check(
            "offset.metadata.max.bytes",
            self.offset_metadata_max_bytes,
            0,
            i32::MAX,
        )?;
        check(
            "offsets.load.buffer.size",
            self.offsets_load_buffer_bytes,
            1,
            i32::MAX,
        )?;
        check(
            "offsets compaction min dirty records",
            self.offsets_compaction_min_dirty_records,
            1000,
            i64::MAX,
        )
    }

    /// The Kafka broker keys (`server.properties`) that [`set`](Self::set) takes: every one of
    /// Kafka's classic-group and offsets settings whose behaviour this coordinator has.
    pub const KAFKA_KEYS: &'static [&'static str] = &[
        "offsets.topic.num.partitions",
        "offsets.topic.segment.bytes",
        "group.min.session.timeout.ms",
        "group.max.session.timeout.ms",
        "group.initial.rebalance.delay.ms",
        "group.max.size",
        "offsets.retention.minutes",
        "offsets.retention.check.interval.ms",
        "offset.metadata.max.bytes",
        "offsets.load.buffer.size",
    ];

    /// Sets the field of Kafka broker key `key` from its `server.properties` value, parsed as
    /// Kafka parses it (an `INT` key as a 32-bit, a `LONG` key as a 64-bit decimal). Returns
    /// whether `key` is one of [`KAFKA_KEYS`](Self::KAFKA_KEYS). The range is checked by
    /// [`validate`](Self::validate), which sees every key at once (the session-timeout bounds
    /// depend on each other).
    ///
    /// # Errors
    /// The value is not a number of the key's type.
    pub fn set(&mut self, key: &str, value: &str) -> Result<bool, String> {
        let int = || int_setting(key, value);
        match key {
            "offsets.topic.num.partitions" => self.offsets_topic_partitions = int()?,
            "offsets.topic.segment.bytes" => {
                self.offsets_topic_segment_bytes = unsigned_int_setting(key, value, |v| {
                    format!(
                        "{key}={v} is outside {} ..= {}",
                        Self::OFFSETS_TOPIC_SEGMENT_BYTES_MIN,
                        Self::OFFSETS_TOPIC_SEGMENT_BYTES_MAX
                    )
                })?;
            }
            "group.min.session.timeout.ms" => self.group_min_session_timeout_ms = int()?,
            "group.max.session.timeout.ms" => self.group_max_session_timeout_ms = int()?,
            "group.initial.rebalance.delay.ms" => self.group_initial_rebalance_delay_ms = int()?,
            "group.max.size" => self.group_max_size = int()?,
            "offsets.retention.minutes" => self.offsets_retention_minutes = int()?,
            "offsets.retention.check.interval.ms" => {
                self.offsets_retention_check_interval_ms = long_setting(key, value)?
            }
            "offset.metadata.max.bytes" => self.offset_metadata_max_bytes = int()?,
            "offsets.load.buffer.size" => self.offsets_load_buffer_bytes = int()?,
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// The value of Kafka broker key `key` (one of [`KAFKA_KEYS`](Self::KAFKA_KEYS)) as
    /// [`set`](Self::set) takes it, or `None` for another key (what DescribeConfigs shows).
    pub fn kafka_value(&self, key: &str) -> Option<String> {
        Some(match key {
            "offsets.topic.num.partitions" => self.offsets_topic_partitions.to_string(),
            "offsets.topic.segment.bytes" => self.offsets_topic_segment_bytes.to_string(),
            "group.min.session.timeout.ms" => self.group_min_session_timeout_ms.to_string(),
            "group.max.session.timeout.ms" => self.group_max_session_timeout_ms.to_string(),
            "group.initial.rebalance.delay.ms" => self.group_initial_rebalance_delay_ms.to_string(),
            "group.max.size" => self.group_max_size.to_string(),
            "offsets.retention.minutes" => self.offsets_retention_minutes.to_string(),
            "offsets.retention.check.interval.ms" => {
                self.offsets_retention_check_interval_ms.to_string()
            }
            "offset.metadata.max.bytes" => self.offset_metadata_max_bytes.to_string(),
            "offsets.load.buffer.size" => self.offsets_load_buffer_bytes.to_string(),
            _ => return None,
        })
    }

    const OFFSETS_TOPIC_SEGMENT_BYTES_MIN: u32 = 1 << 20;
    const OFFSETS_TOPIC_SEGMENT_BYTES_MAX: u32 = 1 << 30;

    /// `offsets.retention.minutes` in milliseconds.
    pub fn offsets_retention_ms(&self) -> i64 {
        i64::from(self.offsets_retention_minutes) * 60_000
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid() {
        assert_eq!(GroupConfig::default().validate(), Ok(()));
    }

    #[test]
    fn every_key_set_takes_reads_back_as_its_value() {
        for (i, key) in GroupConfig::KAFKA_KEYS.iter().enumerate() {
            let mut c = GroupConfig::default();
            let value = (2_000_000 + i).to_string();
            assert_eq!(c.set(key, &value), Ok(true), "{key}");
            assert_eq!(c.kafka_value(key), Some(value), "{key}");
        }
        assert_eq!(GroupConfig::default().kafka_value("group.nope"), None);
    }

    #[test]
    fn validate_names_the_bad_setting() {
        let c = GroupConfig {
            group_min_session_timeout_ms: 10_000,
            group_max_session_timeout_ms: 5_000,
            ..GroupConfig::default()
        };
        let e = c.validate().unwrap_err();
        assert!(e.contains("group.max.session.timeout.ms"), "{e}");
        let c = GroupConfig {
            offsets_topic_partitions: 0,
            ..GroupConfig::default()
        };
        assert!(
            c.validate()
                .unwrap_err()
                .contains("offsets.topic.num.partitions")
        );
        let c = GroupConfig {
            group_initial_rebalance_delay_ms: -1,
            ..GroupConfig::default()
        };
        assert!(c.validate().is_err());
    }

    #[test]
    fn set_takes_each_kafka_key_and_validate_bounds_it() {
        let mut c = GroupConfig::default();
        for (k, v) in [
            ("offsets.topic.num.partitions", "3"),
            ("offsets.topic.segment.bytes", "2097152"),
            ("group.min.session.timeout.ms", "1000"),
            ("group.max.session.timeout.ms", "20000"),
            ("group.initial.rebalance.delay.ms", "3000"),
            ("group.max.size", "7"),
            ("offsets.retention.minutes", "60"),
            ("offsets.retention.check.interval.ms", "4294967296"),
            ("offset.metadata.max.bytes", "100"),
            ("offsets.load.buffer.size", "65536"),
        ] {
            assert_eq!(c.set(k, v), Ok(true), "{k}");
        }
        assert_eq!(
            c,
            GroupConfig {
                offsets_topic_partitions: 3,
                offsets_topic_segment_bytes: 2 << 20,
                group_min_session_timeout_ms: 1000,
                group_max_session_timeout_ms: 20_000,
                group_initial_rebalance_delay_ms: 3000,
                group_max_size: 7,
                offsets_retention_minutes: 60,
                offsets_retention_check_interval_ms: 1 << 32,
                offset_metadata_max_bytes: 100,
                offsets_load_buffer_bytes: 65_536,
                ..GroupConfig::default()
            }
        );
        assert_eq!(c.validate(), Ok(()));
        assert_eq!(c.set("offsets.commit.timeout.ms", "5000"), Ok(false));
        let e = c.set("group.max.size", "2147483648").unwrap_err();
        assert!(e.contains("group.max.size=2147483648"), "{e}");
        let e = c.set("offsets.topic.segment.bytes", "-1").unwrap_err();
        assert!(
            e.contains("offsets.topic.segment.bytes=-1 is outside"),
            "{e}"
        );
        for (k, v) in [
            ("group.max.size", "0"),
            ("offsets.retention.minutes", "0"),
            ("offsets.retention.check.interval.ms", "0"),
            ("group.max.session.timeout.ms", "999"),
            ("offsets.topic.segment.bytes", "1048575"),
        ] {
            let mut c = c.clone();
            c.set(k, v).unwrap();
            let e = c.validate().unwrap_err();
            assert!(e.starts_with(&format!("{k}={v} is outside")), "{e}");
        }
    }
}
