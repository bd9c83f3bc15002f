//! Records inside a v2 batch (Kafka's `DefaultRecord`): varint-framed, with key, value and
//! headers handed out as `Bytes` slices of the (decompressed) records area — no copies; and
//! their offsets and timestamps alone ([`RecordMetas`]), streamed out of a compressed batch
//! through a fixed buffer rather than inflated whole.

use super::compression::Decompressor;
use super::varint::{VarintError, read_varint, read_varlong};
use super::{BatchError, Compression, RecordBatch, TimestampType};
use bytes::Bytes;
use mirrorlog_index::{Offset, Sequence, TimestampMs};
use std::fmt;
use std::io::Read;

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

/// What a batch's header gives each of its records: how many there are, where the batch sits,
/// and the bases its records' deltas apply to.
#[derive(Debug, Clone, Copy)]
struct BatchBases {
    count: u32,
    position: u64,
    base_offset: i64,
    base_timestamp: i64,
    log_append_time: Option<i64>,
    base_sequence: Sequence,
}

impl BatchBases {
    fn of(batch: &RecordBatch) -> BatchBases {
        BatchBases {
            count: batch.records_count().max(0) as u32,
            position: batch.position(),
            base_offset: batch.base_offset().get(),
            base_timestamp: batch.base_timestamp().get(),
            log_append_time: (batch.timestamp_type() == TimestampType::LogAppendTime)
                .then(|| batch.max_timestamp().get()),
            base_sequence: batch.base_sequence(),
        }
    }

    fn meta(&self, ts_delta: i64, offset_delta: i32) -> RecordMeta {
        RecordMeta {
            offset: Offset(self.base_offset.wrapping_add(offset_delta as i64)),
            timestamp: TimestampMs(
                self.log_append_time
                    .unwrap_or(self.base_timestamp.wrapping_add(ts_delta)),
            ),
        }
    }

    fn corrupt(&self, record_index: u32, reason: String) -> BatchError {
        BatchError::CorruptRecord {
            position: self.position,
            record_index,
            reason,
        }
    }
}

/// Iterator over a batch's records: yields exactly `recordsCount` records, then checks that no
/// bytes remain (Kafka's `InvalidRecordException` cases). After an error it yields nothing more.
#[derive(Debug)]
pub struct Records {
    data: Bytes,
    pos: usize,
    index: u32,
    bases: BatchBases,
    failed: bool,
    /// A legacy entry's records (see `legacy::records`).
    legacy: Option<super::legacy::LegacyRecords>,
}

impl Records {
    pub(crate) fn new(batch: &RecordBatch, data: Bytes) -> Records {
        Records {
            data,
            pos: 0,
            index: 0,
            bases: BatchBases::of(batch),
            failed: false,
            legacy: None,
        }
    }

    /// A legacy entry's records.
    pub(crate) fn legacy(batch: &RecordBatch, records: super::legacy::LegacyRecords) -> Records {
        Records {
            legacy: Some(records),
            ..Records::new(batch, Bytes::new())
        }
    }

    /// How many records are left to read.
    pub fn remaining(&self) -> u32 {
        if let Some(l) = &self.legacy {
            return l.remaining();
        }
        if self.failed {
            0
        } else {
            self.bases.count - self.index
        }
    }

    fn corrupt(&mut self, reason: String) -> BatchError {
        self.failed = true;
        self.bases.corrupt(self.index, reason)
    }

    /// Frames the record at `pos` and checks every field; header ranges go to `headers` when
    /// asked for (the full decode), else are only checked (the metadata walk).
    fn frame(&self, mut headers: Option<&mut Vec<HeaderRanges>>) -> Result<Framed, String> {
        let buf = &self.data[self.pos..];
        let (length, n) = read_varint(buf).map_err(|e| varint_reason("length", e))?;
        check_length(length)?;
        let body_start = self.pos + n;
        let body_end = body_start
            .checked_add(length as usize)
            .filter(|&e| e <= self.data.len())
            .ok_or_else(|| overrun(length, self.data.len() - body_start))?;
        let body = &self.data[body_start..body_end];
        let mut c = Cursor { buf: body, pos: 0 };
        let attributes = c.byte("attributes")? as i8;
        let ts_delta = c.varlong("timestampDelta")?;
        let offset_delta = c.varint("offsetDelta")?;
        let key = c.nullable_bytes("key")?;
        let value = c.nullable_bytes("value")?;
        let header_count = c.varint("headersCount")?;
        // Each header needs at least two bytes, so a count beyond that is corrupt: this also
        // bounds the allocation below.
        check_header_count(header_count, body.len() - c.pos)?;
        if let Some(h) = headers.as_deref_mut() {
            h.reserve(header_count as usize);
        }
        for _ in 0..header_count {
            let key = c.nullable_bytes("headerKey")?.ok_or(NULL_HEADER_KEY)?;
            let value = c.nullable_bytes("headerValue")?;
            if let Some(h) = headers.as_deref_mut() {
                h.push((key, value));
            }
        }
        if c.pos != body.len() {
            return Err(fields_short(length, c.pos));
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

    fn read_one(&mut self) -> Result<Record, String> {
        let mut headers = Vec::new();
        let f = self.frame(Some(&mut headers))?;
        let RecordMeta { offset, timestamp } = self.bases.meta(f.ts_delta, f.offset_delta);
        let body_start = f.body_start;
        let slice =
            |r: std::ops::Range<usize>| self.data.slice(body_start + r.start..body_start + r.end);
        let record = Record {
            offset,
            timestamp,
            sequence: if self.bases.base_sequence == Sequence::NONE {
                Sequence::NONE
            } else {
                self.bases.base_sequence.increment(f.offset_delta.max(0))
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
        self.pos = body_end;
        Ok(self.bases.meta(ts_delta, offset_delta))
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
        if self.index == self.bases.count {
            if self.pos != self.data.len() {
                let left = (self.data.len() - self.pos) as u64;
                return Some(Err(self.corrupt(trailing_bytes(left, self.bases.count))));
            }
            return None;
        }
        if self.pos >= self.data.len() {
            return Some(Err(
                self.corrupt(premature_end(self.index, self.bases.count))
            ));
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
    /// `Bytes` slices and no header vector (Kafka's `skipKeyValueIterator`). For a compressed
    /// batch, [`RecordBatch::record_metas`] gives the same without inflating it whole.
    #[inline]
    pub fn next_meta(&mut self) -> Option<Result<RecordMeta, BatchError>> {
        if let Some(l) = &mut self.legacy {
            return l.next().map(|r| {
                r.map(|r| RecordMeta {
                    offset: r.offset,
                    timestamp: r.timestamp,
                })
            });
        }
        self.advance(Self::read_meta)
    }
}

impl Iterator for Records {
    type Item = Result<Record, BatchError>;

    fn next(&mut self) -> Option<Self::Item> {
        if let Some(l) = &mut self.legacy {
            return l.next();
        }
        self.advance(Self::read_one)
    }
}

/// The offsets and timestamps of a batch's records, with every check of [`Records`] (Kafka's
/// `skipKeyValueIterator`): what a leader's validation needs. An uncompressed batch is walked
/// in place ([`Records::next_meta`]); a compressed one is read through its codec's streaming
/// decoder with a fixed buffer, keys, values and headers skipped as they stream past, so a
/// batch that inflates to hundreds of MiB is checked in [`STREAM_BUFFER_BYTES`] (Kafka's
/// `DefaultRecordBatch.streamingIterator`). Its total output stays bounded by
/// [`MAX_DECOMPRESSED_BYTES`](super::MAX_DECOMPRESSED_BYTES), an error past it.
///
/// On the same decompressed bytes it yields what [`Records`] yields, errors included; a stream
/// that fails to decompress is an error at the point it fails, after the records before it
/// (where [`RecordBatch::records`] fails before the first).
pub struct RecordMetas(Metas);

enum Metas {
    InPlace(Records),
    /// Boxed: the decoder's state is large, and only compressed batches need it.
    Streamed(Box<StreamedMetas>),
}

impl RecordMetas {
    pub(crate) fn in_place(records: Records) -> RecordMetas {
        RecordMetas(Metas::InPlace(records))
    }

    pub(crate) fn streamed(
        batch: &RecordBatch,
        codec: Compression,
        decoder: Decompressor,
        buffer_bytes: usize,
    ) -> RecordMetas {
        RecordMetas(Metas::Streamed(Box::new(StreamedMetas {
            src: Stream {
                decoder,
                buf: vec![0; buffer_bytes.max(1)].into_boxed_slice(),
                start: 0,
                end: 0,
                consumed: 0,
                ended: false,
            },
            codec,
            index: 0,
            bases: BatchBases::of(batch),
            failed: false,
        })))
    }
}

impl RecordMetas {
    /// Calls `f` with each record's offset and timestamp until it fails or the records end,
    /// then says the first error — `f`'s or the walk's. The same walk as the iterator, with
    /// the batch's kind decided once rather than at each record: a leader checks every record
    /// of every produced batch this way, and the per-record dispatch cost the in-place walk
    /// about a fifth of its time.
    #[inline]
    pub fn try_each<E: From<BatchError>>(
        self,
        mut f: impl FnMut(RecordMeta) -> Result<(), E>,
    ) -> Result<(), E> {
        match self.0 {
            Metas::InPlace(mut r) => {
                while let Some(m) = r.next_meta() {
                    f(m?)?;
                }
            }
            Metas::Streamed(mut s) => {
                while let Some(m) = s.next_meta() {
                    f(m?)?;
                }
            }
        }
        Ok(())
    }
}

impl Iterator for RecordMetas {
    type Item = Result<RecordMeta, BatchError>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        match &mut self.0 {
            Metas::InPlace(r) => r.next_meta(),
            Metas::Streamed(s) => s.next_meta(),
        }
    }
}

impl fmt::Debug for RecordMetas {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Metas::InPlace(r) => f.debug_tuple("RecordMetas").field(r).finish(),
            Metas::Streamed(s) => f
                .debug_struct("RecordMetas")
                .field("codec", &s.codec)
                .field("index", &s.index)
                .field("consumed", &s.src.consumed)
                .finish(),
        }
    }
}

/// The decompression buffer of a streamed walk.
pub const STREAM_BUFFER_BYTES: usize = 64 * 1024;

/// Why a streamed record could not be read.
enum Fault {
    /// The decompressed bytes are not valid records (a [`BatchError::CorruptRecord`]).
    Corrupt(String),
    /// The decoder failed (a [`BatchError::Decompression`]).
    Decompression(String),
}

/// Why a record's body could not be walked.
enum BodyFault {
    /// A field is wrong within the declared length: reported once the whole body is known to
    /// be there, as [`Records`] first checks the length against the bytes.
    Field(String),
    /// The records ended inside the declared length.
    Ended,
    Decompression(String),
}

struct StreamedMetas {
    src: Stream,
    codec: Compression,
    index: u32,
    bases: BatchBases,
    failed: bool,
}

impl StreamedMetas {
    /// [`Records::advance`] over the stream.
    fn next_meta(&mut self) -> Option<Result<RecordMeta, BatchError>> {
        if self.failed {
            return None;
        }
        let read = if self.index == self.bases.count {
            match self.src.skip(u64::MAX) {
                Ok(0) => return None,
                Ok(left) => Err(Fault::Corrupt(trailing_bytes(left, self.bases.count))),
                Err(e) => Err(Fault::Decompression(e)),
            }
        } else {
            match self.src.fill() {
                Ok(true) => self.read_meta(),
                Ok(false) => Err(Fault::Corrupt(premature_end(self.index, self.bases.count))),
                Err(e) => Err(Fault::Decompression(e)),
            }
        };
        match read {
            Ok(m) => {
                self.index += 1;
                Some(Ok(m))
            }
            Err(fault) => {
                self.failed = true;
                Some(Err(match fault {
                    Fault::Corrupt(reason) => self.bases.corrupt(self.index, reason),
                    Fault::Decompression(reason) => BatchError::Decompression {
                        position: self.bases.position,
                        codec: self.codec,
                        reason,
                    },
                }))
            }
        }
    }

    /// [`Records::frame`]'s checks, in its order, on a record streaming past.
    fn read_meta(&mut self) -> Result<RecordMeta, Fault> {
        let src = &mut self.src;
        let (raw, n) = gather(5, || src.byte().map_err(Fault::Decompression))?;
        let (length, _) =
            read_varint(&raw[..n]).map_err(|e| Fault::Corrupt(varint_reason("length", e)))?;
        check_length(length).map_err(Fault::Corrupt)?;
        let body_start = src.consumed;
        let mut body = Body {
            src,
            left: length as usize,
        };
        let walked = body.walk(length);
        let left = body.left;
        let ended =
            |src: &Stream| Fault::Corrupt(overrun(length, (src.consumed - body_start) as usize));
        match walked {
            Ok((ts_delta, offset_delta)) => Ok(self.bases.meta(ts_delta, offset_delta)),
            Err(BodyFault::Ended) => Err(ended(src)),
            Err(BodyFault::Decompression(e)) => Err(Fault::Decompression(e)),
            Err(BodyFault::Field(reason)) => {
                match src.skip(left as u64).map_err(Fault::Decompression)? {
                    skipped if skipped < left as u64 => Err(ended(src)),
                    _ => Err(Fault::Corrupt(reason)),
                }
            }
        }
    }
}

/// Up to `max` bytes of a varint from `next` (`None` at the end of what may be read): the
/// bytes up to the first without the continuation bit, for [`read_varint`]/[`read_varlong`] to
/// decode and judge exactly as they judge a slice.
fn gather<E>(
    max: usize,
    mut next: impl FnMut() -> Result<Option<u8>, E>,
) -> Result<([u8; 10], usize), E> {
    let mut raw = [0u8; 10];
    let mut n = 0;
    while n < max {
        let Some(b) = next()? else { break };
        raw[n] = b;
        n += 1;
        if b < 0x80 {
            break;
        }
    }
    Ok((raw, n))
}

/// One record's body on the stream: at most `left` more bytes may be read.
struct Body<'a> {
    src: &'a mut Stream,
    left: usize,
}

impl Body<'_> {
    /// The fields of [`Records::frame`]; key, value and header bytes skipped.
    fn walk(&mut self, length: i32) -> Result<(i64, i32), BodyFault> {
        self.byte()?
            .ok_or_else(|| BodyFault::Field("attributes: past the end".into()))?;
        let (raw, n) = gather(10, || self.byte())?;
        let (ts_delta, _) =
            read_varlong(&raw[..n]).map_err(|e| field(varint_reason("timestampDelta", e)))?;
        let offset_delta = self.varint("offsetDelta")?;
        self.nullable_bytes("key")?;
        self.nullable_bytes("value")?;
        let header_count = self.varint("headersCount")?;
        check_header_count(header_count, self.left).map_err(field)?;
        for _ in 0..header_count {
            if !self.nullable_bytes("headerKey")? {
                return Err(field(NULL_HEADER_KEY.into()));
            }
            self.nullable_bytes("headerValue")?;
        }
        if self.left != 0 {
            return Err(field(fields_short(length, length as usize - self.left)));
        }
        Ok((ts_delta, offset_delta))
    }

    /// The next byte of the body, `None` past its declared end.
    fn byte(&mut self) -> Result<Option<u8>, BodyFault> {
        if self.left == 0 {
            return Ok(None);
        }
        match self.src.byte().map_err(BodyFault::Decompression)? {
            None => Err(BodyFault::Ended),
            Some(b) => {
                self.left -= 1;
                Ok(Some(b))
            }
        }
    }

    fn varint(&mut self, name: &str) -> Result<i32, BodyFault> {
        let (raw, n) = gather(5, || self.byte())?;
        let (v, _) = read_varint(&raw[..n]).map_err(|e| field(varint_reason(name, e)))?;
        Ok(v)
    }

    /// Skips a nullable byte field; false when it was null.
    fn nullable_bytes(&mut self, name: &str) -> Result<bool, BodyFault> {
        let len = self.varint(name)?;
        if len < 0 {
            // Kafka reads any negative length as null.
            return Ok(false);
        }
        if len as usize > self.left {
            return Err(field(field_overrun(name, len, self.left)));
        }
        let skipped = self
            .src
            .skip(len as u64)
            .map_err(BodyFault::Decompression)?;
        if skipped < len as u64 {
            return Err(BodyFault::Ended);
        }
        self.left -= len as usize;
        Ok(true)
    }
}

fn field(reason: String) -> BodyFault {
    BodyFault::Field(reason)
}

/// A decompressed stream read through a fixed buffer.
struct Stream {
    decoder: Decompressor,
    buf: Box<[u8]>,
    start: usize,
    end: usize,
    /// Bytes handed out so far: the position in the decompressed records.
    consumed: u64,
    ended: bool,
}

impl Stream {
    /// Buffers more when the buffer is empty; false at the end of the stream.
    fn fill(&mut self) -> Result<bool, String> {
        while self.start == self.end && !self.ended {
            match self.decoder.read(&mut self.buf) {
                Ok(0) => self.ended = true,
                Ok(n) => (self.start, self.end) = (0, n),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e.to_string()),
            }
        }
        Ok(self.start < self.end)
    }

    /// The next byte, `None` at the end.
    #[inline]
    fn byte(&mut self) -> Result<Option<u8>, String> {
        if !self.fill()? {
            return Ok(None);
        }
        let b = self.buf[self.start];
        self.start += 1;
        self.consumed += 1;
        Ok(Some(b))
    }

    /// Skips up to `n` bytes; how many there were.
    fn skip(&mut self, n: u64) -> Result<u64, String> {
        let mut left = n;
        while left > 0 && self.fill()? {
            let k = left.min((self.end - self.start) as u64);
            self.start += k as usize;
            self.consumed += k;
            left -= k;
        }
        Ok(n - left)
    }
}

// The reasons of a corrupt record, shared by the in-memory and the streaming walks so that
// they say the same about the same bytes.

const NULL_HEADER_KEY: &str = "invalid negative header key size";

fn check_length(length: i32) -> Result<(), String> {
    if length < (MIN_RECORD_SIZE - 1) as i32 {
        return Err(format!("record length {length} is below the minimum of 6"));
    }
    Ok(())
}

fn check_header_count(header_count: i32, bytes_left: usize) -> Result<(), String> {
    if header_count < 0 {
        return Err(format!("negative headersCount {header_count}"));
    }
    if header_count as usize > bytes_left / 2 {
        return Err(format!(
            "headersCount {header_count} exceeds the bytes left"
        ));
    }
    Ok(())
}

fn overrun(length: i32, bytes_left: usize) -> String {
    format!("record length {length} runs past the end of the records ({bytes_left} bytes left)")
}

fn field_overrun(field: &str, len: i32, bytes_left: usize) -> String {
    format!("{field}: length {len} runs past the record's end ({bytes_left} bytes left)")
}

fn fields_short(length: i32, taken: usize) -> String {
    format!("record declares {length} bytes but its fields take {taken}")
}

fn trailing_bytes(left: u64, count: u32) -> String {
    format!("{left} bytes remain after the declared {count} records")
}

fn premature_end(index: u32, count: u32) -> String {
    format!("premature end of records: {index} of {count} read")
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
            return Err(field_overrun(field, len, self.buf.len() - self.pos));
        }
        let r = self.pos..end;
        self.pos = end;
        Ok(Some(r))
    }
}
