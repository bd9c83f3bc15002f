//! Transaction coordinator settings, named after Kafka's broker configs.

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
    /// 104857600 (100 MiB); range 1024 ..= i32::MAX.
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
}
