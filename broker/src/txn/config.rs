//! Transaction coordinator settings, named after Kafka's broker configs.

use crate::coordinators::{int_setting, unsigned_int_setting};

/// Transaction coordinator settings. Each field gives its Kafka key, default and valid range;
/// [`TxnConfig::validate`] rejects what is out of range.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnConfig {
    /// `transaction.state.log.num.partitions`: partitions of `__transaction_state`. Kafka's
    /// default is 50; mirrorlog's is 8 (one node: fewer files and fsyncs, the same hashing).
    /// Range 1 ..= 1000. Used when the topic is created; an existing topic keeps its partition
    /// count, since changing it would move transactional ids to other partitions.
    pub transaction_state_partitions: i32,
    /// `transaction.state.log.segment.bytes`: segment size of `__transaction_state`. Default
    /// 104857600 (100 MiB); range 1024 ..= i32::MAX (Kafka: ≥ 1).
    pub transaction_state_segment_bytes: u32,
    /// `transaction.max.timeout.ms`: the largest `transaction.timeout.ms` a producer may ask
    /// for. Default 900000 (15 min); range 1 ..= i32::MAX.
    pub transaction_max_timeout_ms: i32,
    /// `transactional.id.expiration.ms`: an idle transactional id (no transaction open) is
    /// forgotten after this long. Default 604800000 (7 days); range 1 ..= i32::MAX.
    pub transactional_id_expiration_ms: i64,
    /// `transaction.abort.timed.out.transaction.cleanup.interval.ms`: how often
    /// [`tick`](super::TxnCoordinator::tick) looks for transactions past their timeout. Default
    /// 10000; range 1 ..= i32::MAX.
    pub abort_timed_out_transaction_cleanup_interval_ms: i64,
    /// `transaction.remove.expired.transaction.cleanup.interval.ms`: how often `tick` expires
    /// idle transactional ids. Default 3600000 (1 h); range 1 ..= i32::MAX.
    pub remove_expired_transaction_cleanup_interval_ms: i64,
    /// Not a Kafka config: producer ids reserved by one block record in `__transaction_state`
    /// (Kafka's controller hands out blocks of 1000). Default 1000; range 1 ..= 1000000.
    pub producer_id_block_size: i64,
    /// Not a Kafka config (mirrorlog has no log compaction): a `__transaction_state` partition
    /// holding more than this many records past its log start, and more than twice its live
    /// records, has its live records rewritten and its log start raised past the old ones.
    /// Default 100000; range 1 ..= i64::MAX.
    pub state_log_rewrite_min_records: i64,
}

impl Default for TxnConfig {
    fn default() -> Self {
        TxnConfig {
            transaction_state_partitions: 8,
            transaction_state_segment_bytes: 104_857_600,
            transaction_max_timeout_ms: 900_000,
            transactional_id_expiration_ms: 604_800_000,
            abort_timed_out_transaction_cleanup_interval_ms: 10_000,
            remove_expired_transaction_cleanup_interval_ms: 3_600_000,
            producer_id_block_size: 1000,
            state_log_rewrite_min_records: 100_000,
        }
    }
}

impl TxnConfig {
    /// The Kafka broker keys (`server.properties`) that [`set`](Self::set) takes: every one of
    /// Kafka's transaction coordinator settings whose behaviour this coordinator has.
    pub const KAFKA_KEYS: &'static [&'static str] = &[
        "transaction.state.log.num.partitions",
        "transaction.state.log.segment.bytes",
        "transaction.max.timeout.ms",
        "transactional.id.expiration.ms",
        "transaction.abort.timed.out.transaction.cleanup.interval.ms",
        "transaction.remove.expired.transaction.cleanup.interval.ms",
    ];

    /// Sets the field of Kafka broker key `key` from its `server.properties` value, parsed as
    /// Kafka parses it (each is an `INT` there: a 32-bit decimal). Returns whether `key` is one
    /// of [`KAFKA_KEYS`](Self::KAFKA_KEYS). The range is checked by [`validate`](Self::validate).
    ///
    /// # Errors
    /// The value is not a 32-bit integer.
    pub fn set(&mut self, key: &str, value: &str) -> Result<bool, String> {
        let int = || int_setting(key, value);
        match key {
            "transaction.state.log.num.partitions" => self.transaction_state_partitions = int()?,
            "transaction.state.log.segment.bytes" => {
                self.transaction_state_segment_bytes = unsigned_int_setting(key, value, |v| {
                    format!("{key} = {v} is outside 1024..={}", i32::MAX)
                })?;
            }
            "transaction.max.timeout.ms" => self.transaction_max_timeout_ms = int()?,
            "transactional.id.expiration.ms" => {
                self.transactional_id_expiration_ms = i64::from(int()?)
            }
            "transaction.abort.timed.out.transaction.cleanup.interval.ms" => {
                self.abort_timed_out_transaction_cleanup_interval_ms = i64::from(int()?)
            }
            "transaction.remove.expired.transaction.cleanup.interval.ms" => {
                self.remove_expired_transaction_cleanup_interval_ms = i64::from(int()?)
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// The value of Kafka broker key `key` (one of [`KAFKA_KEYS`](Self::KAFKA_KEYS)) as
    /// [`set`](Self::set) takes it, or `None` for another key (what DescribeConfigs shows).
    pub fn kafka_value(&self, key: &str) -> Option<String> {
        Some(match key {
            "transaction.state.log.num.partitions" => self.transaction_state_partitions.to_string(),
            "transaction.state.log.segment.bytes" => {
                self.transaction_state_segment_bytes.to_string()
            }
            "transaction.max.timeout.ms" => self.transaction_max_timeout_ms.to_string(),
            "transactional.id.expiration.ms" => self.transactional_id_expiration_ms.to_string(),
            "transaction.abort.timed.out.transaction.cleanup.interval.ms" => self
                .abort_timed_out_transaction_cleanup_interval_ms
                .to_string(),
            "transaction.remove.expired.transaction.cleanup.interval.ms" => self
                .remove_expired_transaction_cleanup_interval_ms
                .to_string(),
            _ => return None,
        })
    }

    /// Rejects out-of-range settings.
    ///
    /// # Errors
    /// A message naming the setting, its value and its range.
    pub fn validate(&self) -> Result<(), String> {
        fn check(name: &str, v: i64, lo: i64, hi: i64) -> Result<(), String> {
            if (lo..=hi).contains(&v) {
                Ok(())
            } else {
                Err(format!("{name} = {v} is outside {lo}..={hi}"))
            }
        }
        let max = i64::from(i32::MAX);
        check(
            "transaction.state.log.num.partitions",
            i64::from(self.transaction_state_partitions),
            1,
            1000,
        )?;
        check(
            "transaction.state.log.segment.bytes",
            i64::from(self.transaction_state_segment_bytes),
            1024,
            max,
        )?;
        check(
            "transaction.max.timeout.ms",
            i64::from(self.transaction_max_timeout_ms),
            1,
            max,
        )?;
        check(
            "transactional.id.expiration.ms",
            self.transactional_id_expiration_ms,
            1,
            max,
        )?;
        check(
            "transaction.abort.timed.out.transaction.cleanup.interval.ms",
            self.abort_timed_out_transaction_cleanup_interval_ms,
            1,
            max,
        )?;
        check(
            "transaction.remove.expired.transaction.cleanup.interval.ms",
            self.remove_expired_transaction_cleanup_interval_ms,
            1,
            max,
        )?;
        check(
            "producer id block size",
            self.producer_id_block_size,
            1,
            1_000_000,
        )?;
        check(
            "state log rewrite threshold (records)",
            self.state_log_rewrite_min_records,
            1,
            i64::MAX,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid() {
        TxnConfig::default().validate().unwrap();
    }

    #[test]
    fn validate_names_the_setting() {
        let c = TxnConfig {
            transaction_max_timeout_ms: 0,
            ..TxnConfig::default()
        };
        let e = c.validate().unwrap_err();
        assert!(e.contains("transaction.max.timeout.ms = 0"), "{e}");
        let c = TxnConfig {
            transaction_state_partitions: 1001,
            ..TxnConfig::default()
        };
        assert!(c.validate().unwrap_err().contains("num.partitions"));
    }

    #[test]
    fn set_takes_each_kafka_key_and_validate_bounds_it() {
        let mut c = TxnConfig::default();
        for (k, v) in [
            ("transaction.state.log.num.partitions", "4"),
            ("transaction.state.log.segment.bytes", "1048576"),
            ("transaction.max.timeout.ms", "60000"),
            ("transactional.id.expiration.ms", "86400000"),
            (
                "transaction.abort.timed.out.transaction.cleanup.interval.ms",
                "500",
            ),
            (
                "transaction.remove.expired.transaction.cleanup.interval.ms",
                "1000",
            ),
        ] {
            assert_eq!(c.set(k, v), Ok(true), "{k}");
        }
        assert_eq!(
            c,
            TxnConfig {
                transaction_state_partitions: 4,
                transaction_state_segment_bytes: 1 << 20,
                transaction_max_timeout_ms: 60_000,
                transactional_id_expiration_ms: 86_400_000,
                abort_timed_out_transaction_cleanup_interval_ms: 500,
                remove_expired_transaction_cleanup_interval_ms: 1000,
                ..TxnConfig::default()
            }
        );
        c.validate().unwrap();
        assert_eq!(c.set("producer.id.expiration.ms", "1"), Ok(false));
        // Kafka's keys are all `INT`: a value past i32::MAX is refused by name.
        let e = c
            .set("transactional.id.expiration.ms", "2147483648")
            .unwrap_err();
        assert!(
            e.contains("transactional.id.expiration.ms=2147483648"),
            "{e}"
        );
        for k in TxnConfig::KAFKA_KEYS {
            let mut c = c.clone();
            c.set(k, "0").unwrap();
            let e = c.validate().unwrap_err();
            assert!(e.starts_with(&format!("{k} = 0 is outside")), "{e}");
        }
    }

    #[test]
    fn every_key_set_takes_reads_back_as_its_value() {
        for (i, key) in TxnConfig::KAFKA_KEYS.iter().enumerate() {
            let mut c = TxnConfig::default();
            let value = (2_000_000 + i).to_string();
            assert_eq!(c.set(key, &value), Ok(true), "{key}");
            assert_eq!(c.kafka_value(key), Some(value), "{key}");
        }
        assert_eq!(TxnConfig::default().kafka_value("transaction.nope"), None);
    }
}
