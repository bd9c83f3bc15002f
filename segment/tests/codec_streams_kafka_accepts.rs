//! Compressed record streams Kafka's readers accept but `segment/src/batch/compression.rs`
//! rejects, so a produce of such a batch fails (leader path decompresses) and `records()` errors:
//!
//! - snappy: snappy-java's `SnappyInputStream.hasNextChunk` treats a chunk length equal to the
//!   xerial magic head (`0x82534E41`) as the start of a *concatenated* stream (reads the rest of
//!   the 16-byte header and continues); we read it as a negative chunk length and fail;
//! - gzip: Java's `GZIPInputStream.readTrailer` ignores bytes after a member that do not form a
//!   valid gzip header ("ignore any malformed, do nothing"); flate2's `MultiGzDecoder` fails.

use bytes::Bytes;
use mirrorlog_index::TimestampMs;
use mirrorlog_segment::batch::{BatchBuilder, Compression, RecordBatch};
use std::io::Write;

const XERIAL_HEADER: [u8; 16] = [
    0x82, b'S', b'N', b'A', b'P', b'P', b'Y', 0, 0, 0, 0, 1, 0, 0, 0, 1,
];

/// Three records, uncompressed: (header, records area).
fn plain() -> (RecordBatch, Vec<u8>) {
    let mut b = BatchBuilder::new();
    for i in 0..3u8 {
        b.append(
            TimestampMs(1000 + i as i64),
            Some(&[i]),
            Some(&[i; 100]),
            &[],
        );
    }
    let batch = b.build();
    let area = batch.as_bytes()[61..].to_vec();
    (batch, area)
}

/// The same batch with `area` as its (compressed) records area and a fresh CRC.
fn with_area(codec: Compression, area: &[u8]) -> RecordBatch {
    let (batch, _) = plain();
    let mut out = batch.as_bytes()[..61].to_vec();
    out.extend_from_slice(area);
    let len = (out.len() - 12) as i32;
    out[8..12].copy_from_slice(&len.to_be_bytes());
    out[21..23].copy_from_slice(&(codec.id() as i16).to_be_bytes());
    let crc = crc32c::crc32c(&out[21..]);
    out[17..21].copy_from_slice(&crc.to_be_bytes());
    RecordBatch::new(Bytes::from(out)).unwrap()
}

fn read_all(b: &RecordBatch) -> Result<usize, String> {
    b.validate().map_err(|e| e.to_string())?;
    let mut n = 0;
    for r in b.records().map_err(|e| e.to_string())? {
        r.map_err(|e| e.to_string())?;
        n += 1;
    }
    Ok(n)
}

#[test]
fn concatenated_xerial_snappy_streams_are_read_like_snappy_java() {
    let (_, area) = plain();
    let (a, b) = area.split_at(100);
    let mut z = Vec::new();
    for part in [a, b] {
        z.extend_from_slice(&XERIAL_HEADER);
        let block = snap::raw::Encoder::new().compress_vec(part).unwrap();
        z.extend_from_slice(&(block.len() as i32).to_be_bytes());
        z.extend_from_slice(&block);
    }
    assert_eq!(read_all(&with_area(Compression::Snappy, &z)), Ok(3));
}

#[test]
fn bytes_after_a_gzip_member_are_ignored_like_gzip_input_stream() {
    let (_, area) = plain();
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(&area).unwrap();
    let mut z = e.finish().unwrap();
    z.extend_from_slice(&[0, 0, 0, 0]);
    assert_eq!(read_all(&with_area(Compression::Gzip, &z)), Ok(3));
}
