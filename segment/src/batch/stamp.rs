//! In-place stamping of the header fields a broker owns.
//!
//! `baseOffset` and `partitionLeaderEpoch` sit outside the CRC, so the leader and the mirror path
//! restamp them without touching the CRC. `maxTimestamp` and `attributes` are covered: changing
//! them (LogAppendTime topics) recomputes the CRC, as Kafka's `setMaxTimestamp` does.

use super::{
    BatchError, RECORD_BATCH_OVERHEAD, TimestampType, attr, be_i16, be_i32, compute_crc, field,
};
use mirrorlog_index::{LeaderEpoch, Offset, TimestampMs};

/// A mutable view of one batch's header, for stamping in place.
#[derive(Debug)]
pub struct BatchHeaderMut<'a> {
    buf: &'a mut [u8],
}

impl<'a> BatchHeaderMut<'a> {
    /// Wraps a buffer that holds exactly one batch.
    pub fn new(buf: &'a mut [u8]) -> Result<BatchHeaderMut<'a>, BatchError> {
        if buf.len() < RECORD_BATCH_OVERHEAD {
            return Err(BatchError::Truncated {
                position: 0,
                needed: RECORD_BATCH_OVERHEAD,
                available: buf.len(),
            });
        }
        let declared = be_i32(buf, field::BATCH_LENGTH) as i64 + 12;
        if declared != buf.len() as i64 {
            return Err(BatchError::invalid(
                0,
                "batchLength",
                format!("{} (the buffer's length - 12)", buf.len() - 12),
                declared - 12,
            ));
        }
        Ok(BatchHeaderMut { buf })
    }

    /// Sets `baseOffset` (no CRC change).
    pub fn set_base_offset(&mut self, offset: Offset) {
        self.buf[field::BASE_OFFSET..field::BASE_OFFSET + 8]
            .copy_from_slice(&offset.get().to_be_bytes());
    }

    /// Sets `partitionLeaderEpoch` (no CRC change).
    pub fn set_partition_leader_epoch(&mut self, epoch: LeaderEpoch) {
        self.buf[field::PARTITION_LEADER_EPOCH..field::PARTITION_LEADER_EPOCH + 4]
            .copy_from_slice(&epoch.get().to_be_bytes());
    }

    /// Sets the timestamp type bit and `maxTimestamp`, then recomputes the CRC — Kafka's
    /// `setMaxTimestamp`. A no-op (no CRC pass) when both already hold these values.
    pub fn set_max_timestamp(&mut self, ts_type: TimestampType, max_timestamp: TimestampMs) {
        let old_attr = be_i16(self.buf, field::ATTRIBUTES);
        let new_attr = match ts_type {
            TimestampType::CreateTime => old_attr & !attr::TIMESTAMP_TYPE,
            TimestampType::LogAppendTime => old_attr | attr::TIMESTAMP_TYPE,
        };
        let old_ts = i64::from_be_bytes(
            self.buf[field::MAX_TIMESTAMP..field::MAX_TIMESTAMP + 8]
                .try_into()
                .expect("8 bytes"),
        );
        if old_attr == new_attr && old_ts == max_timestamp.get() {
            return;
        }
        self.buf[field::ATTRIBUTES..field::ATTRIBUTES + 2].copy_from_slice(&new_attr.to_be_bytes());
        self.buf[field::MAX_TIMESTAMP..field::MAX_TIMESTAMP + 8]
            .copy_from_slice(&max_timestamp.get().to_be_bytes());
        self.update_crc();
    }

    /// Recomputes and stores the CRC.
    pub fn update_crc(&mut self) {
        let crc = compute_crc(self.buf);
        self.buf[field::CRC..field::CRC + 4].copy_from_slice(&crc.to_be_bytes());
    }
}
