//! Records inside a v2 batch (Kafka's `DefaultRecord`): varint-framed, with key, value and
//! headers handed out as `Bytes` slices of the (decompressed) records area — no copies.

use super::varint::{VarintError, read_varint, read_varlong};
use super::{BatchError, RecordBatch, TimestampType};
use bytes::Bytes;
use mirrorlog_index::{Offset, Sequence, TimestampMs};

/// The smallest possible record: length, attributes, timestampDelta, offsetDelta, keyLength,
/// valueLength and headersCount, one byte each.
pub(crate) const MIN_RECORD_SIZE: usize = 7;

/// One record header. Kafka requires a header key (a UTF-8 string); the value may be null.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    /// The key's bytes (UTF-8 by Kafka's contract; not checked here).
    pub key: Bytes,
    /// The value, `None` when null.
    pub value: Option<Bytes>,
}

/// One decoded record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// `baseOffset + offsetDelta`.
    pub offset: Offset,
    /// `baseTimestamp + timestampDelta`, or the batch's `maxTimestamp` in a LogAppendTime batch
    /// (as Kafka reports it).
    pub timestamp: TimestampMs,
    /// `baseSequence + offsetDelta` (wrapping), or none.
    pub sequence: Sequence,
    /// The record's attributes byte (unused by Kafka, 0).
    pub attributes: i8,
    /// The key, `None` when null.
    pub key: Option<Bytes>,
    /// The value, `None` for a tombstone.
    pub value: Option<Bytes>,
    /// The headers, in order.
    pub headers: Vec<Header>,
    /// The record's encoded size including its length varint.
    pub size_bytes: usize,
}

/// A record's offset and timestamp (see [`Records::next_meta`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordMeta {
    /// `baseOffset + offsetDelta`.
    pub offset: Offset,
    /// As [`Record::timestamp`].
    pub timestamp: TimestampMs,
}

/// A header's key and value ranges inside a record body.
type HeaderRanges = (std::ops::Range<usize>, Option<std::ops::Range<usize>>);

/// A framed record: its fields as ranges of the body.
struct Framed {
    attributes: i8,
    ts_delta: i64,
    offset_delta: i32,
    key: Option<std::ops::Range<usize>>,
    value: Option<std::ops::Range<usize>>,
    body_start: usize,
    body_end: usize,
}

/// Iterator over a batch's records: yields exactly `recordsCount` records, then checks that no
/// bytes remain (Kafka's `InvalidRecordException` cases). After an error it yields nothing more.
#[derive(Debug)]
pub struct Records {
    data: Bytes,
    pos: usize,
    index: u32,
    count: u32,
    position: u64,
    base_offset: i64,
    base_timestamp: i64,
    log_append_time: Option<i64>,
    base_sequence: Sequence,
    failed: bool,
}

impl Records {
    pub(crate) fn new(batch: &RecordBatch, data: Bytes) -> Records {
        Records {
            data,
            pos: 0,
            index: 0,
            count: batch.records_count().max(0) as u32,
            position: batch.position(),
            base_offset: batch.base_offset().get(),
            base_timestamp: batch.base_timestamp().get(),
            log_append_time: (batch.timestamp_type() == TimestampType::LogAppendTime)
                .then(|| batch.max_timestamp().get()),
            base_sequence: batch.base_sequence(),
            failed: false,
        }
    }

    /// How many records are left to read.
    pub fn remaining(&self) -> u32 {
        if self.failed {
            0
        } else {
            self.count - self.index
        }
    }

    fn corrupt(&mut self, reason: String) -> BatchError {
        self.failed = true;
        BatchError::CorruptRecord {
            position: self.position,
            record_index: self.index,
            reason,
        }
    }

    /// Frames the record at `pos` and checks every field; header ranges go to `headers` when
    /// asked for (the full decode), else are only checked (the metadata walk).
    fn frame(&self, mut headers: Option<&mut Vec<HeaderRanges>>) -> Result<Framed, String> {
        let buf = &self.data[self.pos..];
        let (length, n) = read_varint(buf).map_err(|e| varint_reason("length", e))?;
        if length < (MIN_RECORD_SIZE - 1) as i32 {
            return Err(format!("record length {length} is below the minimum of 6"));
        }
        let body_start = self.pos + n;
        let body_end = body_start
            .checked_add(length as usize)
            .filter(|&e| e <= self.data.len())
            .ok_or_else(|| {
                format!(
                    "record length {length} runs past the end of the records ({} bytes left)",
                    self.data.len() - body_start
                )
            })?;
        let body = &self.data[body_start..body_end];
        let mut c = Cursor { buf: body, pos: 0 };
        let attributes = c.byte("attributes")? as i8;
        let ts_delta = c.varlong("timestampDelta")?;
        let offset_delta = c.varint("offsetDelta")?;
        let key = c.nullable_bytes("key")?;
        let value = c.nullable_bytes("value")?;
        let header_count = c.varint("headersCount")?;
        if header_count < 0 {
            return Err(format!("negative headersCount {header_count}"));
        }
        // Each header needs at least two bytes, so a count beyond that is corrupt: this also
        // bounds the allocation below.
        if header_count as usize > (body.len() - c.pos) / 2 {
            return Err(format!(
                "headersCount {header_count} exceeds the bytes left"
            ));
        }
        if let Some(h) = headers.as_deref_mut() {
            h.reserve(header_count as usize);
        }
        for _ in 0..header_count {
            let key = c
                .nullable_bytes("headerKey")?
                .ok_or("invalid negative header key size")?;
            let value = c.nullable_bytes("headerValue")?;
            if let Some(h) = headers.as_deref_mut() {
                h.push((key, value));
            }
        }
        if c.pos != body.len() {
            return Err(format!(
                "record declares {length} bytes but its fields take {}",
                c.pos
            ));
        }
        Ok(Framed {
            attributes,
            ts_delta,
            offset_delta,
            key,
            value,
            body_start,
            body_end,
        })
    }

    fn offset_and_timestamp(&self, f: &Framed) -> (Offset, TimestampMs) {
        self.offset_and_timestamp_of(f.ts_delta, f.offset_delta)
    }

    fn offset_and_timestamp_of(&self, ts_delta: i64, offset_delta: i32) -> (Offset, TimestampMs) {
        (
            Offset(self.base_offset.wrapping_add(offset_delta as i64)),
            TimestampMs(
                self.log_append_time
                    .unwrap_or(self.base_timestamp.wrapping_add(ts_delta)),
            ),
        )
    }

    fn read_one(&mut self) -> Result<Record, String> {
        let mut headers = Vec::new();
        let f = self.frame(Some(&mut headers))?;
        let (offset, timestamp) = self.offset_and_timestamp(&f);
        let body_start = f.body_start;
        let slice =
            |r: std::ops::Range<usize>| self.data.slice(body_start + r.start..body_start + r.end);
        let record = Record {
            offset,
            timestamp,
            sequence: if self.base_sequence == Sequence::NONE {
                Sequence::NONE
            } else {
                self.base_sequence.increment(f.offset_delta.max(0))
            },
            attributes: f.attributes,
            key: f.key.map(slice),
            value: f.value.map(slice),
            headers: headers
                .into_iter()
                .map(|(k, v)| Header {
                    key: slice(k),
                    value: v.map(slice),
                })
                .collect(),
            size_bytes: f.body_end - self.pos,
        };
        self.pos = f.body_end;
        Ok(record)
    }

    fn read_meta(&mut self) -> Result<RecordMeta, String> {
        // The lean walk accepts only what `frame` accepts; anything it cannot take (a malformed
        // record, or one it does not bother with) goes through `frame`, which says what is wrong.
        let (ts_delta, offset_delta, body_end) = match skim(&self.data, self.pos) {
            Some(m) => m,
            None => {
                let f = self.frame(None)?;
                (f.ts_delta, f.offset_delta, f.body_end)
            }
        };
        let (offset, timestamp) = self.offset_and_timestamp_of(ts_delta, offset_delta);
        self.pos = body_end;
        Ok(RecordMeta { offset, timestamp })
    }

    /// The framing and count checks shared by [`Iterator::next`] and
    /// [`next_meta`](Self::next_meta).
    fn advance<T>(
        &mut self,
        read: impl FnOnce(&mut Self) -> Result<T, String>,
    ) -> Option<Result<T, BatchError>> {
        if self.failed {
            return None;
        }
        if self.index == self.count {
            if self.pos != self.data.len() {
                let left = self.data.len() - self.pos;
                return Some(Err(self.corrupt(format!(
                    "{left} bytes remain after the declared {} records",
                    self.count
                ))));
            }
            return None;
        }
        if self.pos >= self.data.len() {
            return Some(Err(self.corrupt(format!(
                "premature end of records: {} of {} read",
                self.index, self.count
            ))));
        }
        match read(self) {
            Ok(r) => {
                self.index += 1;
                Some(Ok(r))
            }
            Err(reason) => Some(Err(self.corrupt(reason))),
        }
    }

    /// The next record's offset and timestamp, with every check of [`Iterator::next`] but no
    /// `Bytes` slices and no header vector (Kafka's `skipKeyValueIterator`): what a leader's
    /// validation needs.
    pub fn next_meta(&mut self) -> Option<Result<RecordMeta, BatchError>> {
        self.advance(Self::read_meta)
    }
}

impl Iterator for Records {
    type Item = Result<Record, BatchError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.advance(Self::read_one)
    }
}

fn varint_reason(field: &str, e: VarintError) -> String {
    match e {
        VarintError::Eof => format!("{field}: varint runs past the end"),
        VarintError::TooLong => format!("{field}: varint is too long"),
    }
}

/// The record at `pos` of `data` framed for its timestamp delta, offset delta and end, with
/// every check of [`Records::frame`] but no error text: `None` when any check fails (the caller
/// then asks `frame` why). This is the leader's per-record validation, so it is kept to plain
/// byte loads with a one-byte fast path for varints (record lengths below 64 bytes aside, the
/// length is the only multi-byte varint of a typical record).
#[inline]
fn skim(data: &[u8], pos: usize) -> Option<(i64, i32, usize)> {
    let mut body_start = pos;
    let length = skim_varint(data, &mut body_start)?;
    if length < (MIN_RECORD_SIZE - 1) as i32 {
        return None;
    }
    let body_end = body_start.checked_add(length as usize)?;
    let body = data.get(body_start..body_end)?;
    let mut at = 1; // attributes: the body holds at least 6 bytes
    let ts_delta = skim_varlong(body, &mut at)?;
    let offset_delta = skim_varint(body, &mut at)?;
    skim_bytes(body, &mut at)?; // key
    skim_bytes(body, &mut at)?; // value
    let header_count = skim_varint(body, &mut at)?;
    if header_count < 0 || header_count as usize > (body.len() - at) / 2 {
        return None;
    }
    for _ in 0..header_count {
        skim_bytes(body, &mut at)?.then_some(())?; // a header key may not be null
        skim_bytes(body, &mut at)?;
    }
    (at == body.len()).then_some((ts_delta, offset_delta, body_end))
}

/// A zigzag varint with fast paths for one and two bytes: a record's length and a value's
/// length up to 8 KiB take two, and those went through the general loop (a call) twice per
/// record.
#[inline(always)]
fn skim_varint(buf: &[u8], at: &mut usize) -> Option<i32> {
    let b = *buf.get(*at)?;
    if b < 0x80 {
        *at += 1;
        return Some(((b >> 1) as i32) ^ -((b & 1) as i32));
    }
    if let Some(&b1) = buf.get(*at + 1)
        && b1 < 0x80
    {
        *at += 2;
        let v = (b & 0x7f) as u32 | (b1 as u32) << 7;
        return Some(((v >> 1) as i32) ^ -((v & 1) as i32));
    }
    let (v, n) = read_varint(&buf[*at..]).ok()?;
    *at += n;
    Some(v)
}

#[inline(always)]
fn skim_varlong(buf: &[u8], at: &mut usize) -> Option<i64> {
    let b = *buf.get(*at)?;
    if b < 0x80 {
        *at += 1;
        return Some(((b >> 1) as i64) ^ -((b & 1) as i64));
    }
    let (v, n) = read_varlong(&buf[*at..]).ok()?;
    *at += n;
    Some(v)
}

/// Skips a nullable byte field; `Some(false)` when it was null (any negative length, as Kafka
/// reads it).
#[inline(always)]
fn skim_bytes(buf: &[u8], at: &mut usize) -> Option<bool> {
    let len = skim_varint(buf, at)?;
    if len < 0 {
        return Some(false);
    }
    let end = at.checked_add(len as usize).filter(|&e| e <= buf.len())?;
    *at = end;
    Some(true)
}

struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl Cursor<'_> {
    fn byte(&mut self, field: &str) -> Result<u8, String> {
        let b = *self
            .buf
            .get(self.pos)
            .ok_or_else(|| format!("{field}: past the end"))?;
        self.pos += 1;
        Ok(b)
    }
    fn varint(&mut self, field: &str) -> Result<i32, String> {
        let (v, n) = read_varint(&self.buf[self.pos..]).map_err(|e| varint_reason(field, e))?;
        self.pos += n;
        Ok(v)
    }
    fn varlong(&mut self, field: &str) -> Result<i64, String> {
        let (v, n) = read_varlong(&self.buf[self.pos..]).map_err(|e| varint_reason(field, e))?;
        self.pos += n;
        Ok(v)
    }
    /// A varint length (−1 = null) and that many bytes; returns their range in `buf`.
    fn nullable_bytes(&mut self, field: &str) -> Result<Option<std::ops::Range<usize>>, String> {
        let len = self.varint(field)?;
        if len < 0 {
            // Kafka reads any negative length as null.
            return Ok(None);
        }
        let end = self.pos + len as usize;
        if end > self.buf.len() {
            return Err(format!(
                "{field}: length {len} runs past the record's end ({} bytes left)",
                self.buf.len() - self.pos
            ));
        }
        let r = self.pos..end;
        self.pos = end;
        Ok(Some(r))
    }
}
