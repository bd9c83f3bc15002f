//! The four codecs, framed exactly as Kafka frames them (`clients/.../common/compress/`):
//!
//! - gzip: a standard gzip member (several concatenated members are accepted, and bytes after a
//!   member that do not start another one are ignored, as Java's `GZIPInputStream` does);
//! - snappy: snappy-java's *xerial* stream: a 16-byte header (`\x82SNAPPY\0`, version 1,
//!   min-compatible version 1) then chunks `[int32 BE length][raw snappy block]`. Input without
//!   the header is read as one raw snappy block, as snappy-java does, and a second header where
//!   a chunk length belongs starts a concatenated stream (snappy-java's `hasNextChunk`);
//! - lz4: the LZ4 frame format with Kafka's rules: version 01, independent blocks, no dictionary
//!   id, reserved bits zero, 64 KiB–4 MiB blocks. We write 64 KiB blocks, no block or content
//!   checksum, no content size — what Kafka's `Lz4BlockOutputStream` writes;
//! - zstd: standard zstd frames.
//!
//! Decompression is bounded: a stream that would inflate past the caller's limit is an error, so
//! a hostile batch cannot make us allocate without bound.

use std::fmt;
use std::io::{Read, Write};

/// A batch's compression codec (attribute bits 0–2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Compression {
    /// id 0
    None,
    /// id 1
    Gzip,
    /// id 2
    Snappy,
    /// id 3
    Lz4,
    /// id 4
    Zstd,
}

/// The most bytes one batch's records may decompress to (256 MiB). Kafka has no explicit cap;
/// with `max.message.bytes` at its 1 MiB default a legitimate batch stays far below this.
pub const MAX_DECOMPRESSED_BYTES: usize = 256 << 20;

/// snappy-java's stream header magic.
const XERIAL_MAGIC: [u8; 8] = [0x82, b'S', b'N', b'A', b'P', b'P', b'Y', 0];
const XERIAL_HEADER_LEN: usize = 16;
/// snappy-java's default block size (uncompressed bytes per chunk).
const XERIAL_BLOCK: usize = 32 * 1024;
const LZ4_MAGIC: u32 = 0x184D_2204;

impl Compression {
    /// The codec for an attribute id, `None` (the Option) for ids 5–7.
    pub fn from_id(id: u8) -> Option<Compression> {
        Some(match id {
            0 => Compression::None,
            1 => Compression::Gzip,
            2 => Compression::Snappy,
            3 => Compression::Lz4,
            4 => Compression::Zstd,
            _ => return None,
        })
    }

    /// The attribute id.
    pub fn id(self) -> u8 {
        match self {
            Compression::None => 0,
            Compression::Gzip => 1,
            Compression::Snappy => 2,
            Compression::Lz4 => 3,
            Compression::Zstd => 4,
        }
    }

    /// The name Kafka's `compression.type` and `mirrorlog dump` use.
    pub fn name(self) -> &'static str {
        match self {
            Compression::None => "none",
            Compression::Gzip => "gzip",
            Compression::Snappy => "snappy",
            Compression::Lz4 => "lz4",
            Compression::Zstd => "zstd",
        }
    }

    /// Parses a `compression.type` codec name.
    pub fn from_name(name: &str) -> Option<Compression> {
        [
            Compression::None,
            Compression::Gzip,
            Compression::Snappy,
            Compression::Lz4,
            Compression::Zstd,
        ]
        .into_iter()
        .find(|c| c.name() == name)
    }
}

impl fmt::Display for Compression {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Compresses `data` as one stream in Kafka's framing for `codec`.
pub(crate) fn compress(codec: Compression, data: &[u8]) -> Vec<u8> {
    match codec {
        Compression::None => data.to_vec(),
        Compression::Gzip => {
            let mut enc = flate2::write::GzEncoder::new(
                Vec::with_capacity(data.len() / 2 + 32),
                flate2::Compression::default(),
            );
            enc.write_all(data).expect("writing to a Vec cannot fail");
            enc.finish().expect("writing to a Vec cannot fail")
        }
        Compression::Snappy => {
            let mut out = Vec::with_capacity(XERIAL_HEADER_LEN + data.len() / 2 + 64);
            out.extend_from_slice(&XERIAL_MAGIC);
            out.extend_from_slice(&1i32.to_be_bytes());
            out.extend_from_slice(&1i32.to_be_bytes());
            let mut enc = snap::raw::Encoder::new();
            for chunk in data.chunks(XERIAL_BLOCK) {
                let block = enc
                    .compress_vec(chunk)
                    .expect("snappy block within size limits");
                out.extend_from_slice(&(block.len() as i32).to_be_bytes());
                out.extend_from_slice(&block);
            }
            out
        }
        Compression::Lz4 => {
            let info = lz4_flex::frame::FrameInfo::new()
                .block_size(lz4_flex::frame::BlockSize::Max64KB)
                .block_mode(lz4_flex::frame::BlockMode::Independent)
                .block_checksums(false)
                .content_checksum(false);
            let mut enc = lz4_flex::frame::FrameEncoder::with_frame_info(
                info,
                Vec::with_capacity(data.len() / 2 + 32),
            );
            enc.write_all(data).expect("writing to a Vec cannot fail");
            enc.finish().expect("writing to a Vec cannot fail")
        }
        Compression::Zstd => zstd::stream::encode_all(data, 3).expect("zstd into a Vec"),
    }
}

/// Decompresses a records area; the error says what the decoder found wrong.
pub(crate) fn decompress(
    codec: Compression,
    data: &[u8],
    limit: usize,
) -> Result<bytes::Bytes, String> {
    let out = match codec {
        Compression::None => data.to_vec(),
        Compression::Gzip => gunzip(data, limit)?,
        Compression::Snappy => xerial_decompress(data, limit)?,
        Compression::Lz4 => {
            check_kafka_lz4_header(data)?;
            read_bounded(lz4_flex::frame::FrameDecoder::new(data), limit)?
        }
        Compression::Zstd => {
            let dec = zstd::stream::read::Decoder::with_buffer(data).map_err(|e| e.to_string())?;
            read_bounded(dec, limit)?
        }
    };
    Ok(bytes::Bytes::from(out))
}

fn read_bounded(reader: impl Read, limit: usize) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    let read = reader
        .take(limit as u64 + 1)
        .read_to_end(&mut out)
        .map_err(|e| e.to_string())?;
    if read > limit {
        return Err(format!("decompressed size exceeds the {limit}-byte limit"));
    }
    Ok(out)
}

/// Java's `GZIPInputStream`: members back to back; after a member, bytes that do not start
/// another gzip header end the stream and are ignored (its `readTrailer`).
fn gunzip(data: &[u8], limit: usize) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    let mut rest = data;
    loop {
        let mut member = flate2::bufread::GzDecoder::new(rest);
        let room = (limit - out.len()) as u64 + 1;
        (&mut member)
            .take(room)
            .read_to_end(&mut out)
            .map_err(|e| e.to_string())?;
        if out.len() > limit {
            return Err(format!("decompressed size exceeds the {limit}-byte limit"));
        }
        rest = member.into_inner();
        // Another member needs at least the 10-byte header with magic 1f 8b and method 8.
        if rest.len() < 10 || rest[..3] != [0x1f, 0x8b, 8] {
            return Ok(out);
        }
    }
}

fn xerial_decompress(data: &[u8], limit: usize) -> Result<Vec<u8>, String> {
    let mut dec = snap::raw::Decoder::new();
    if data.len() < XERIAL_HEADER_LEN || data[..8] != XERIAL_MAGIC {
        // snappy-java reads a stream without its header as one raw block.
        let len = snap::raw::decompress_len(data).map_err(|e| e.to_string())?;
        if len > limit {
            return Err(format!(
                "decompressed size {len} exceeds the {limit}-byte limit"
            ));
        }
        return dec.decompress_vec(data).map_err(|e| e.to_string());
    }
    let mut out = Vec::new();
    let mut pos = XERIAL_HEADER_LEN;
    while pos < data.len() {
        if data.len() - pos < 4 {
            return Err(format!("xerial chunk length truncated at byte {pos}"));
        }
        if data[pos..pos + 4] == XERIAL_MAGIC[..4] {
            // snappy-java reads a chunk length equal to the magic's head as the start of a
            // concatenated stream: a whole header follows, then that stream's chunks; a
            // header that is not valid ends the input.
            let header = data
                .get(pos..pos + XERIAL_HEADER_LEN)
                .ok_or_else(|| format!("concatenated xerial header truncated at byte {pos}"))?;
            if header[..8] != XERIAL_MAGIC {
                break;
            }
            pos += XERIAL_HEADER_LEN;
            continue;
        }
        let len = i32::from_be_bytes(data[pos..pos + 4].try_into().expect("4 bytes"));
        pos += 4;
        if len < 0 || len as usize > data.len() - pos {
            return Err(format!(
                "xerial chunk at byte {} declares {len} bytes, {} remain",
                pos - 4,
                data.len() - pos
            ));
        }
        let block = &data[pos..pos + len as usize];
        pos += len as usize;
        let n = snap::raw::decompress_len(block).map_err(|e| e.to_string())?;
        if out.len() + n > limit {
            return Err(format!("decompressed size exceeds the {limit}-byte limit"));
        }
        let start = out.len();
        out.resize(start + n, 0);
        dec.decompress(block, &mut out[start..])
            .map_err(|e| e.to_string())?;
    }
    Ok(out)
}

/// Kafka's `KafkaLZ4BlockInputStream` header rules, checked before the frame is decoded.
fn check_kafka_lz4_header(data: &[u8]) -> Result<(), String> {
    if data.len() < 7 {
        return Err(format!("lz4 frame header truncated ({} bytes)", data.len()));
    }
    let magic = u32::from_le_bytes(data[0..4].try_into().expect("4 bytes"));
    if magic != LZ4_MAGIC {
        return Err(format!(
            "lz4 frame magic {magic:#010x}, expected {LZ4_MAGIC:#010x}"
        ));
    }
    let flg = data[4];
    let bd = data[5];
    if flg >> 6 != 0b01 {
        return Err(format!("lz4 frame version {}, expected 1", flg >> 6));
    }
    if flg & 0x03 != 0 {
        return Err("lz4 frame has a dictionary id or reserved FLG bit set".into());
    }
    if flg & 0x20 == 0 {
        return Err("lz4 frame uses dependent (linked) blocks, which Kafka rejects".into());
    }
    if bd & 0x8f != 0 || !(4..=7).contains(&((bd >> 4) & 0x07)) {
        return Err(format!("lz4 block descriptor {bd:#04x} is invalid"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const ALL: [Compression; 5] = [
        Compression::None,
        Compression::Gzip,
        Compression::Snappy,
        Compression::Lz4,
        Compression::Zstd,
    ];

    #[test]
    fn codec_ids_and_names_match_kafka() {
        for (i, c) in ALL.iter().enumerate() {
            assert_eq!(c.id() as usize, i);
            assert_eq!(Compression::from_id(i as u8), Some(*c));
            assert_eq!(Compression::from_name(c.name()), Some(*c));
        }
        assert_eq!(Compression::from_id(5), None);
    }

    #[test]
    fn snappy_stream_has_the_xerial_header() {
        let out = compress(Compression::Snappy, b"hello hello hello");
        assert_eq!(&out[..8], &XERIAL_MAGIC);
        assert_eq!(&out[8..16], &[0, 0, 0, 1, 0, 0, 0, 1]);
    }

    #[test]
    fn lz4_frame_matches_kafkas_writer_flags() {
        let out = compress(Compression::Lz4, &[7u8; 100_000]);
        assert_eq!(&out[0..4], &LZ4_MAGIC.to_le_bytes());
        assert_eq!(
            out[4], 0x60,
            "FLG: version 01, independent blocks, no checksums"
        );
        assert_eq!(out[5], 0x40, "BD: 64 KiB blocks");
    }

    #[test]
    fn dependent_lz4_blocks_are_rejected() {
        let mut out = compress(Compression::Lz4, b"abc");
        out[4] &= !0x20;
        let err = decompress(Compression::Lz4, &out, 1 << 20).unwrap_err();
        assert!(err.contains("dependent"), "{err}");
    }

    #[test]
    fn raw_snappy_without_header_is_accepted() {
        let raw = snap::raw::Encoder::new()
            .compress_vec(b"raw snappy block")
            .unwrap();
        let out = decompress(Compression::Snappy, &raw, 1 << 20).unwrap();
        assert_eq!(&out[..], b"raw snappy block");
    }

    #[test]
    fn decompression_past_the_limit_is_an_error() {
        let data = vec![0u8; 1 << 20];
        for c in ALL.into_iter().skip(1) {
            let z = compress(c, &data);
            let err = decompress(c, &z, 1000).unwrap_err();
            assert!(err.contains("limit"), "{c}: {err}");
        }
    }

    #[test]
    fn gzip_members_back_to_back_are_one_stream() {
        let mut z = compress(Compression::Gzip, b"first ");
        z.extend(compress(Compression::Gzip, b"second"));
        let out = decompress(Compression::Gzip, &z, 1 << 20).unwrap();
        assert_eq!(&out[..], b"first second");
        // A damaged second member is still an error, as it is for Java.
        let mut bad = compress(Compression::Gzip, b"first ");
        let second = compress(Compression::Gzip, b"second");
        bad.extend_from_slice(&second[..second.len() - 3]);
        assert!(decompress(Compression::Gzip, &bad, 1 << 20).is_err());
    }

    #[test]
    fn concatenated_xerial_stream_with_a_bad_header_ends_the_input() {
        let mut z = compress(Compression::Snappy, b"abc");
        z.extend_from_slice(&[0x82, b'S', b'N', b'A', 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(
            &decompress(Compression::Snappy, &z, 1 << 20).unwrap()[..],
            b"abc"
        );
        let mut short = compress(Compression::Snappy, b"abc");
        short.extend_from_slice(&XERIAL_MAGIC[..6]);
        assert!(decompress(Compression::Snappy, &short, 1 << 20).is_err());
    }

    proptest! {
        #[test]
        fn every_codec_round_trips(data in proptest::collection::vec(any::<u8>(), 0..100_000)) {
            for c in ALL {
                let z = compress(c, &data);
                let back = decompress(c, &z, MAX_DECOMPRESSED_BYTES).unwrap();
                prop_assert_eq!(&back[..], &data[..], "{}", c);
            }
        }

        #[test]
        fn garbage_never_panics(data in proptest::collection::vec(any::<u8>(), 0..300)) {
            for c in ALL {
                let _ = decompress(c, &data, 1 << 20);
            }
        }
    }
}
