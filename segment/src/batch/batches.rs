//! Iterating the batches of a buffer that holds them back to back (a segment's bytes, a fetch
//! response's records), the way Kafka's `FileLogInputStream` does: a partial batch at the end is a
//! truncated tail — iteration stops cleanly and says where — while a malformed or corrupt batch is
//! an error that names its position, after which the iterator yields nothing more.
//!
//! It frames magic 2 only, unless told [`legacy`](Batches::legacy) entries are welcome: what a
//! client produces must be v2, while a follower or a mirror copies whatever its leader or source
//! serves, the legacy entries (magic 0 and 1) of an older Kafka's segments included.

use super::{
    BatchError, LOG_OVERHEAD, RECORD_BATCH_OVERHEAD, RecordBatch, be_i32, field, is_legacy_magic,
    legacy,
};
use bytes::Bytes;

/// Bytes up to and including `magic`: Kafka's `HEADER_SIZE_UP_TO_MAGIC`. A tail shorter than
/// this cannot even be recognised as a batch.
const HEADER_SIZE_UP_TO_MAGIC: usize = field::MAGIC + 1;

/// Where a buffer ends in the middle of a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TruncatedTail {
    /// Position of the partial batch.
    pub position: u64,
    /// Bytes present from that position on.
    pub available: usize,
    /// The batch's full size, when its length field could be read.
    pub needed: Option<usize>,
}

/// Iterator over concatenated batches. See the module docs.
#[derive(Debug)]
pub struct Batches {
    buf: Bytes,
    pos: usize,
    base_position: u64,
    verify: bool,
    legacy: bool,
    done: bool,
    truncated: Option<TruncatedTail>,
    corrupt_at: Option<u64>,
}

impl Batches {
    /// Batches of `buf`, which starts at position 0.
    pub fn new(buf: Bytes) -> Batches {
        Batches::at(buf, 0)
    }

    /// Batches of `buf`, whose first byte sits at `base_position` of its file: positions in
    /// results and errors are file positions.
    pub fn at(buf: Bytes, base_position: u64) -> Batches {
        Batches {
            buf,
            pos: 0,
            base_position,
            verify: true,
            legacy: false,
            done: false,
            truncated: None,
            corrupt_at: None,
        }
    }

    /// Whether each batch is fully validated (CRC32C and header sanity, the default) or only
    /// framed (length and magic) — for callers that validate later or trust the bytes.
    pub fn verify(mut self, verify: bool) -> Batches {
        self.verify = verify;
        self
    }

    /// Whether legacy entries (magic 0 and 1) are framed too, each validated as a stored one
    /// ([`RecordBatch::validate_stored`]: its CRC-32), as Kafka's replica append takes them
    /// from a leader's or a source's Fetch answer. Off by default: a client's produce is v2 only.
    /// A legacy entry's size field sits where a v2 batch's length does, so a partial one at the
    /// end is a truncated tail the same way.
    pub fn legacy(mut self, legacy: bool) -> Batches {
        self.legacy = legacy;
        self
    }

    /// The position just past the last batch returned: every byte before it belongs to a valid
    /// batch. Recovery truncates a segment here.
    pub fn valid_end(&self) -> u64 {
        self.base_position + self.pos as u64
    }

    /// Set once iteration reached a partial batch at the end.
    pub fn truncated_tail(&self) -> Option<TruncatedTail> {
        self.truncated
    }

    /// The position of the first corrupt batch, once one was found.
    pub fn first_corrupt(&self) -> Option<u64> {
        self.corrupt_at
    }

    fn fail(&mut self, e: BatchError) -> Option<Result<RecordBatch, BatchError>> {
        self.done = true;
        self.corrupt_at = Some(e.position());
        Some(Err(e))
    }
}

impl Iterator for Batches {
    type Item = Result<RecordBatch, BatchError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let remaining = self.buf.len() - self.pos;
        let position = self.base_position + self.pos as u64;
        if remaining == 0 {
            self.done = true;
            return None;
        }
        if remaining < HEADER_SIZE_UP_TO_MAGIC {
            self.done = true;
            self.truncated = Some(TruncatedTail {
                position,
                available: remaining,
                needed: None,
            });
            return None;
        }
        let batch_length = be_i32(&self.buf[self.pos..], field::BATCH_LENGTH);
        let magic = self.buf[self.pos + field::MAGIC] as i8;
        let is_legacy = self.legacy && is_legacy_magic(magic);
        let min = match is_legacy {
            true => legacy::min_entry_length(magic).expect("a legacy magic") as i32,
            false => (RECORD_BATCH_OVERHEAD - LOG_OVERHEAD) as i32,
        };
        if batch_length < min {
            return self.fail(BatchError::invalid(
                position,
                "batchLength",
                format!(">= {min}"),
                batch_length,
            ));
        }
        if magic != super::MAGIC_V2 && !is_legacy {
            return self.fail(BatchError::invalid(position, "magic", "2", magic));
        }
        let size = LOG_OVERHEAD + batch_length as usize;
        if remaining < size {
            self.done = true;
            self.truncated = Some(TruncatedTail {
                position,
                available: remaining,
                needed: Some(size),
            });
            return None;
        }
        let batch = match RecordBatch::at(self.buf.slice(self.pos..self.pos + size), position) {
            Ok(b) => b,
            Err(e) => return self.fail(e),
        };
        if self.verify
            && let Err(e) = match is_legacy {
                true => batch.validate_stored(),
                false => batch.validate(),
            }
        {
            return self.fail(e);
        }
        self.pos += size;
        Some(Ok(batch))
    }
}
