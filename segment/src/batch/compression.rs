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
//! a hostile batch cannot make us allocate without bound. It is also incremental
//! ([`Decompressor`], a `Read`): a caller that needs only the records' offsets and timestamps
//! reads them through a small buffer and never holds the inflated batch.

use bytes::buf::Reader;
use bytes::{Buf, Bytes};
use std::fmt;
use std::io::{self, Read, Write};

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

/// Decompresses a records area whole; the error says what the decoder found wrong.
pub(crate) fn decompress(codec: Compression, data: &Bytes, limit: usize) -> Result<Bytes, String> {
    if codec == Compression::None {
        return Ok(data.clone());
    }
    let mut out = Vec::new();
    Decompressor::new(codec, data.clone(), limit)?
        .read_to_end(&mut out)
        .map_err(|e| e.to_string())?;
    Ok(Bytes::from(out))
}

/// A compressed records area as a `Read`: the output comes out piece by piece as it is read,
/// through each codec's own streaming decoder (only snappy-java's xerial chunk loop is ours),
/// so a reader that keeps a small buffer holds a small buffer whatever the batch inflates to.
/// Reading past `limit` decompressed bytes is an error, as it is for [`decompress`].
pub(crate) struct Decompressor {
    decoder: Decoder,
    produced: u64,
    limit: u64,
}

enum Decoder {
    Gzip(Gunzip),
    Snappy(Xerial),
    Lz4(lz4_flex::frame::FrameDecoder<Reader<Bytes>>),
    Zstd(zstd::stream::read::Decoder<'static, Reader<Bytes>>),
}

impl Decompressor {
    /// A decoder for `data` compressed with `codec` (not [`Compression::None`]); what can be
    /// checked before any output (lz4's header, zstd's context, a headerless snappy block) is
    /// checked here.
    pub(crate) fn new(
        codec: Compression,
        data: Bytes,
        limit: usize,
    ) -> Result<Decompressor, String> {
        let decoder = match codec {
            Compression::None => unreachable!("an uncompressed records area needs no decoder"),
            Compression::Gzip => Decoder::Gzip(Gunzip {
                member: Some(flate2::bufread::GzDecoder::new(data.reader())),
            }),
            Compression::Snappy => Decoder::Snappy(Xerial::new(data, limit)?),
            Compression::Lz4 => {
                check_kafka_lz4_header(&data)?;
                Decoder::Lz4(lz4_flex::frame::FrameDecoder::new(data.reader()))
            }
            Compression::Zstd => Decoder::Zstd(
                zstd::stream::read::Decoder::with_buffer(data.reader())
                    .map_err(|e| e.to_string())?,
            ),
        };
        Ok(Decompressor {
            decoder,
            produced: 0,
            limit: limit as u64,
        })
    }
}

impl Read for Decompressor {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = match &mut self.decoder {
            Decoder::Gzip(d) => d.read(buf)?,
            Decoder::Snappy(d) => d.read(buf)?,
            Decoder::Lz4(d) => d.read(buf)?,
            Decoder::Zstd(d) => d.read(buf)?,
        };
        self.produced += n as u64;
        if self.produced > self.limit {
            return Err(io::Error::other(format!(
                "decompressed size exceeds the {}-byte limit",
                self.limit
            )));
        }
        Ok(n)
    }
}

/// Java's `GZIPInputStream`: members back to back; after a member, bytes that do not start
/// another gzip header end the stream and are ignored (its `readTrailer`).
struct Gunzip {
    /// The member being read; `None` once the stream ended.
    member: Option<flate2::bufread::GzDecoder<Reader<Bytes>>>,
}

impl Read for Gunzip {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while let Some(member) = &mut self.member {
            let n = member.read(buf)?;
            if n > 0 || buf.is_empty() {
                return Ok(n);
            }
            let rest = self.member.take().expect("a member").into_inner();
            // Another member needs at least the 10-byte header with magic 1f 8b and method 8.
            let next = rest.get_ref();
            if next.len() >= 10 && next[..3] == [0x1f, 0x8b, 8] {
                self.member = Some(flate2::bufread::GzDecoder::new(rest));
            }
        }
        Ok(0)
    }
}

/// snappy-java's stream, one chunk decoded at a time (a chunk inflates to at most about 21
/// times its compressed size, and snappy-java writes 32 KiB ones).
struct Xerial {
    data: Bytes,
    /// The next chunk's length field in `data`.
    pos: usize,
    /// The current chunk's output, and how much of it was read.
    chunk: Vec<u8>,
    read: usize,
    produced: usize,
    limit: usize,
    decoder: snap::raw::Decoder,
}

impl Xerial {
    fn new(data: Bytes, limit: usize) -> Result<Xerial, String> {
        let mut x = Xerial {
            pos: XERIAL_HEADER_LEN,
            data,
            chunk: Vec::new(),
            read: 0,
            produced: 0,
            limit,
            decoder: snap::raw::Decoder::new(),
        };
        if x.data.len() < XERIAL_HEADER_LEN || x.data[..8] != XERIAL_MAGIC {
            // snappy-java reads a stream without its header as one raw block.
            let len = snap::raw::decompress_len(&x.data).map_err(|e| e.to_string())?;
            if len > limit {
                return Err(format!(
                    "decompressed size {len} exceeds the {limit}-byte limit"
                ));
            }
            x.chunk = x
                .decoder
                .decompress_vec(&x.data)
                .map_err(|e| e.to_string())?;
            x.pos = x.data.len();
        }
        Ok(x)
    }

    /// Decodes the next chunk into `chunk`; false at the end of the stream.
    fn next_chunk(&mut self) -> Result<bool, String> {
        let data = &self.data;
        while self.pos < data.len() {
            let pos = self.pos;
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
                    self.pos = data.len();
                    break;
                }
                self.pos += XERIAL_HEADER_LEN;
                continue;
            }
            let len = i32::from_be_bytes(data[pos..pos + 4].try_into().expect("4 bytes"));
            let start = pos + 4;
            if len < 0 || len as usize > data.len() - start {
                return Err(format!(
                    "xerial chunk at byte {pos} declares {len} bytes, {} remain",
                    data.len() - start
                ));
            }
            let block = &data[start..start + len as usize];
            self.pos = start + len as usize;
            let n = snap::raw::decompress_len(block).map_err(|e| e.to_string())?;
            if self.produced + n > self.limit {
                return Err(format!(
                    "decompressed size exceeds the {}-byte limit",
                    self.limit
                ));
            }
            self.chunk.clear();
            self.chunk.resize(n, 0);
            self.decoder
                .decompress(block, &mut self.chunk)
                .map_err(|e| e.to_string())?;
            self.produced += n;
            self.read = 0;
            return Ok(true);
        }
        Ok(false)
    }
}

impl Read for Xerial {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.read == self.chunk.len() {
            if buf.is_empty() || !self.next_chunk().map_err(io::Error::other)? {
                return Ok(0);
            }
        }
        let n = buf.len().min(self.chunk.len() - self.read);
        buf[..n].copy_from_slice(&self.chunk[self.read..self.read + n]);
        self.read += n;
        Ok(n)
    }
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

    fn decompress(codec: Compression, data: &[u8], limit: usize) -> Result<Bytes, String> {
        super::decompress(codec, &Bytes::copy_from_slice(data), limit)
    }

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
