//! Reading the batches of a `.log` file through the I/O trait, in chunks, with their file
//! positions: the one scanner that recovery, offset translation and `mirrorlog dump` share.
//!
//! The file is read in chunks (default 1 MiB) into `Bytes`; batches are framed from the chunk as
//! zero-copy slices, and a batch that straddles a chunk boundary triggers a read starting at that
//! batch. A batch bigger than a chunk is read whole. A partial batch at the end of the scanned
//! range is a torn tail (iteration ends, [`FileBatches::truncated_tail`] says where); a batch that
//! cannot be framed or, when verifying, fails `validate_stored()`, is an error after which the
//! iterator stops.
//!
//! As Kafka's `FileLogInputStream`, it frames every magic by the byte at position 16: v2 batches
//! and the legacy entries (magic 0 and 1) of a segment an older Kafka wrote, checked by their
//! own CRC-32.

use crate::batch::{
    BatchError, LOG_OVERHEAD, RECORD_BATCH_OVERHEAD, RecordBatch, TruncatedTail, legacy,
};
use crate::io::{IoError, StorageFile};
use bytes::Bytes;

/// Why a scan stopped early.
#[derive(Debug, thiserror::Error)]
pub enum ScanError {
    /// The batch at a position is malformed or corrupt.
    #[error(transparent)]
    Batch(#[from] BatchError),
    /// Reading the file failed.
    #[error(transparent)]
    Io(#[from] IoError),
}

/// The default read size of a scan.
pub const SCAN_CHUNK_BYTES: usize = 1 << 20;
const HEADER_UP_TO_MAGIC: usize = 17;

/// Iterator over the batches of a file range `[start, end)`.
#[derive(Debug)]
pub struct FileBatches<'a> {
    file: &'a dyn StorageFile,
    pos: u64,
    end: u64,
    chunk: usize,
    buf: Bytes,
    buf_start: u64,
    verify: bool,
    done: bool,
    truncated: Option<TruncatedTail>,
}

impl<'a> FileBatches<'a> {
    /// Batches of `file` from `start` up to `end` (exclusive; usually the file's size), fully
    /// validated.
    pub fn new(file: &'a dyn StorageFile, start: u64, end: u64) -> FileBatches<'a> {
        FileBatches {
            file,
            pos: start,
            end,
            chunk: SCAN_CHUNK_BYTES,
            buf: Bytes::new(),
            buf_start: start,
            verify: true,
            done: start >= end,
            truncated: None,
        }
    }

    /// Validate each batch (CRC32C, or a legacy entry's CRC-32, and header sanity; the default)
    /// or only frame it.
    pub fn verify(mut self, verify: bool) -> Self {
        self.verify = verify;
        self
    }

    /// Read size per I/O (at least one batch header).
    pub fn chunk_bytes(mut self, chunk: usize) -> Self {
        self.chunk = chunk.max(RECORD_BATCH_OVERHEAD);
        self
    }

    /// The position after the last batch returned: everything before it is valid.
    pub fn position(&self) -> u64 {
        self.pos
    }

    /// Set when the range ends inside a batch.
    pub fn truncated_tail(&self) -> Option<TruncatedTail> {
        self.truncated
    }

    /// Makes sure `[pos, pos + need)` is buffered, or as much of it as the range holds.
    fn fill(&mut self, need: usize) -> Result<(), IoError> {
        let have_from = self.pos - self.buf_start;
        if (self.buf.len() as u64) >= have_from + need as u64 {
            return Ok(());
        }
        let want = (self.end - self.pos).min(need.max(self.chunk) as u64) as usize;
        // Reuse the previous chunk's memory when no batch handed out still holds it: zeroing a
        // fresh megabyte per chunk cost 12% of a recovery scan.
        let mut v = match std::mem::take(&mut self.buf).try_into_mut() {
            Ok(mut m) if m.capacity() >= want => {
                // Old bytes are overwritten by the read; only growth is zero-filled.
                m.resize(want, 0);
                m
            }
            _ => bytes::BytesMut::zeroed(want),
        };
        let mut got = 0;
        while got < want {
            let n = self.file.read_at(&mut v[got..], self.pos + got as u64)?;
            if n == 0 {
                break;
            }
            got += n;
        }
        v.truncate(got);
        self.buf = v.freeze();
        self.buf_start = self.pos;
        Ok(())
    }

    fn available(&self) -> &[u8] {
        &self.buf[(self.pos - self.buf_start) as usize..]
    }

    fn tail(&mut self, needed: Option<usize>) {
        self.done = true;
        self.truncated = Some(TruncatedTail {
            position: self.pos,
            available: self.available().len(),
            needed,
        });
    }

    fn step(&mut self) -> Result<Option<RecordBatch>, ScanError> {
        if self.pos >= self.end {
            self.done = true;
            return Ok(None);
        }
        self.fill(HEADER_UP_TO_MAGIC)?;
        if self.available().len() < HEADER_UP_TO_MAGIC {
            self.tail(None);
            return Ok(None);
        }
        let h = self.available();
        let batch_length = i32::from_be_bytes(h[8..12].try_into().expect("4 bytes"));
        let magic = h[16] as i8;
        let Some(min) = legacy::min_entry_length(magic) else {
            return Err(BatchError::InvalidField {
                position: self.pos,
                field: "magic",
                expected: "0, 1 or 2".into(),
                found: magic.to_string(),
            }
            .into());
        };
        if batch_length < min as i32 {
            return Err(BatchError::InvalidField {
                position: self.pos,
                field: "batchLength",
                expected: format!(">= {min}"),
                found: batch_length.to_string(),
            }
            .into());
        }
        let size = LOG_OVERHEAD + batch_length as usize;
        if (self.end - self.pos) < size as u64 {
            self.fill(size)?;
            self.tail(Some(size));
            return Ok(None);
        }
        self.fill(size)?;
        if self.available().len() < size {
            // The file is shorter than the range said (it shrank under us): a tail.
            self.tail(Some(size));
            return Ok(None);
        }
        let at = (self.pos - self.buf_start) as usize;
        let batch = RecordBatch::at(self.buf.slice(at..at + size), self.pos)?;
        if self.verify {
            batch.validate_stored()?;
        }
        self.pos += size as u64;
        Ok(Some(batch))
    }
}

impl Iterator for FileBatches<'_> {
    type Item = Result<RecordBatch, ScanError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        match self.step() {
            Ok(Some(b)) => Some(Ok(b)),
            Ok(None) => None,
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::batch::BatchBuilder;
    use crate::io::{OpenMode, SimStorage, Storage};
    use mirrorlog_index::{Offset, TimestampMs};
    use std::path::Path;

    fn file_with(
        storage: &SimStorage,
        batches: usize,
        value: usize,
    ) -> (std::sync::Arc<dyn StorageFile>, Vec<u64>) {
        let f = storage
            .open(
                Path::new("/d/00000000000000000000.log"),
                OpenMode::CreateOrOpen,
            )
            .unwrap();
        let mut pos = 0u64;
        let mut positions = vec![];
        for i in 0..batches {
            let b = BatchBuilder::new()
                .base_offset(Offset(i as i64))
                .record(TimestampMs(i as i64), None, Some(&vec![i as u8; value]))
                .build();
            positions.push(pos);
            f.write_at(b.as_bytes().clone(), pos).unwrap();
            pos += b.size_bytes() as u64;
        }
        (f, positions)
    }

    #[test]
    fn batches_straddling_chunks_and_larger_than_a_chunk_are_read_whole() {
        let sim = SimStorage::new();
        sim.create_dir_all(Path::new("/d")).unwrap();
        let (f, positions) = file_with(&sim, 50, 300);
        let len = f.len().unwrap();
        for chunk in [61, 100, 350, 1000, 1 << 20] {
            let got: Vec<u64> = FileBatches::new(&*f, 0, len)
                .chunk_bytes(chunk)
                .map(|b| b.unwrap().position())
                .collect();
            assert_eq!(got, positions, "chunk {chunk}");
        }
    }

    #[test]
    fn a_scan_stops_at_a_torn_tail_and_reports_it() {
        let sim = SimStorage::new();
        sim.create_dir_all(Path::new("/d")).unwrap();
        let (f, positions) = file_with(&sim, 3, 100);
        let len = f.len().unwrap();
        let mut it = FileBatches::new(&*f, 0, len - 5).chunk_bytes(64);
        assert_eq!(it.by_ref().count(), 2);
        let t = it.truncated_tail().unwrap();
        assert_eq!(t.position, positions[2]);
        assert_eq!(it.position(), positions[2]);
    }

    #[test]
    fn a_corrupt_batch_stops_the_scan_with_its_position() {
        let sim = SimStorage::new();
        sim.create_dir_all(Path::new("/d")).unwrap();
        let (f, positions) = file_with(&sim, 3, 100);
        f.write_at(Bytes::from_static(&[0xAA]), positions[1] + 70)
            .unwrap();
        let len = f.len().unwrap();
        let mut it = FileBatches::new(&*f, 0, len);
        assert!(it.next().unwrap().is_ok());
        match it.next().unwrap() {
            Err(ScanError::Batch(BatchError::CrcMismatch { position, .. })) => {
                assert_eq!(position, positions[1])
            }
            other => panic!("{other:?}"),
        }
        assert!(it.next().is_none());
        assert_eq!(it.position(), positions[1]);
    }
}
