//! Fetch answers whose record bytes go from the segment file to the socket with `sendfile(2)`,
//! never through user space.
//!
//! The response encoder (`kafka-protocol`) wants every partition's records as [`Bytes`]. The
//! fetch handler gives it a *placeholder* instead of reading the file: a `Bytes` of the right
//! length over a shared, never-written zero region, one distinct range of it per deferred slice
//! of the answer, and records which [`FileSlice`] each range stands for in a [`FileRecords`].
//! [`encode_fetch_response_pieces`](super::frame::encode_fetch_response_pieces) passes buffers of
//! 4 KiB and more through by address, so each placeholder comes out as a piece of its own;
//! [`write_with_files`] writes the pieces in order, the in-memory ones with `send` (`MSG_MORE`
//! when file bytes follow, so the small header and the records share segments) and each
//! placeholder's slice with `sendfile` from the segment's descriptor. The bytes on the wire are
//! exactly those of the same answer with the slices read into memory.
//!
//! A placeholder is only ever made for an answer that goes to [`write_with_files`] with its
//! `FileRecords` (the listener's fetch path): nothing else may see it, its bytes are zeros.
//!
//! # A slice that shrinks before it is sent
//! The slice's file is held open, so a segment deleted meanwhile is still read whole. A segment
//! *truncated* below the slice's end (a follower truncating to a diverging epoch) leaves
//! `sendfile` nothing to send: it returns 0 at the new end of file. The answer's size prefix and
//! record lengths are already on the wire by then, so no well-formed answer can follow: the
//! write fails ([`io::ErrorKind::UnexpectedEof`]) and the listener closes the connection, and the
//! client sees a connection lost mid-answer, never wrong bytes in a whole one. Kafka does the
//! same: `FileRecords.writeTo` throws ("has been truncated during write") when the file is now
//! shorter than the slice's end, and the failed send closes the channel. As in Kafka (and as with
//! the `pread` this replaces, between the handler dropping the log's lock and reading), a
//! truncation followed by appends that fill the file past the slice's end again before the send
//! is not detected here; the batches' CRCs are what a client checks.

use bytes::Bytes;
use mirrorlog_segment::segment::FileSlice;
use std::io;
use std::os::fd::RawFd;
use std::sync::OnceLock;

/// The placeholder region's size: the most record bytes one answer can defer. The rest of a
/// larger answer is read into memory as before. Zero-filled on allocation and never written, so
/// its pages are never touched: virtual address space only.
const REGION_BYTES: usize = 256 << 20;

/// Slices shorter than this are read into memory: the encoder copies them into the frame (see
/// `PASS_THROUGH_MIN_BYTES` in `frame.rs`), and a `sendfile` call would cost more than the copy.
pub const MIN_DEFERRED_BYTES: usize = 4096;

fn region() -> &'static [u8] {
    static REGION: OnceLock<&'static [u8]> = OnceLock::new();
    // `vec![0; n]` of this size is a fresh anonymous mapping (calloc): no page is touched.
    REGION.get_or_init(|| Box::leak(vec![0u8; REGION_BYTES].into_boxed_slice()))
}

/// The file slices a fetch answer's placeholders stand for, in the order they were made.
#[derive(Debug, Default)]
pub struct FileRecords {
    /// Each slice with where its placeholder starts in the region.
    slices: Vec<(usize, FileSlice)>,
    /// Region bytes handed out so far.
    used: usize,
}

impl FileRecords {
    /// A placeholder for `slice`, recorded here; `None` when the slice is to be read into memory
    /// instead (its file has no descriptor, it is shorter than [`MIN_DEFERRED_BYTES`], or the
    /// region is used up).
    pub fn defer(&mut self, slice: &FileSlice) -> Option<Bytes> {
        let len = slice.length as usize;
        if len < MIN_DEFERRED_BYTES || slice.file.raw_fd().is_none() {
            return None;
        }
        let start = self.used;
        let end = start.checked_add(len).filter(|&e| e <= REGION_BYTES)?;
        self.used = end;
        self.slices.push((start, slice.clone()));
        Some(Bytes::from_static(&region()[start..end]))
    }

    /// Whether no slice was deferred.
    pub fn is_empty(&self) -> bool {
        self.slices.is_empty()
    }

    /// Record bytes deferred.
    pub fn bytes(&self) -> usize {
        self.slices.iter().map(|(_, s)| s.length as usize).sum()
    }

    /// The slice `piece` is the placeholder of, if it is one.
    fn slice_of(&self, piece: &Bytes) -> Option<&FileSlice> {
        if self.slices.is_empty() {
            return None;
        }
        let base = region().as_ptr() as usize;
        let start = (piece.as_ptr() as usize).checked_sub(base)?;
        let i = self.slices.binary_search_by_key(&start, |(s, _)| *s).ok()?;
        let slice = &self.slices[i].1;
        (slice.length as usize == piece.len()).then_some(slice)
    }
}

/// Writes `pieces` (an encoded fetch answer, see the module docs) to the socket `fd`, sending
/// each placeholder's slice from its file.
///
/// # Errors
/// The socket's, or [`io::ErrorKind::UnexpectedEof`] when a slice's file ended before the slice
/// did (the connection must then be closed: part of the answer is on the wire).
pub fn write_with_files(fd: RawFd, pieces: &[Bytes], files: &FileRecords) -> io::Result<()> {
    let mut from = 0;
    for (i, piece) in pieces.iter().enumerate() {
        if let Some(slice) = files.slice_of(piece) {
            send_all(fd, &pieces[from..i], true)?;
            send_file(fd, slice)?;
            from = i + 1;
        }
    }
    send_all(fd, &pieces[from..], false)
}

/// `sendmsg` of all of `pieces` (at most 1024 a call, Linux's `IOV_MAX`); `more`: more of the
/// answer follows at once (`MSG_MORE`).
fn send_all(fd: RawFd, pieces: &[Bytes], more: bool) -> io::Result<()> {
    let flags = libc::MSG_NOSIGNAL | if more { libc::MSG_MORE } else { 0 };
    let mut slices: Vec<io::IoSlice<'_>> = pieces
        .iter()
        .filter(|p| !p.is_empty())
        .map(|p| io::IoSlice::new(p))
        .collect();
    let mut rest = &mut slices[..];
    while !rest.is_empty() {
        let n = rest.len().min(1024);
        // SAFETY: an all-zero msghdr is valid (no name, no control data).
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        // `IoSlice` is ABI-compatible with `iovec` on Unix; the kernel only reads through it.
        msg.msg_iov = rest.as_mut_ptr().cast();
        msg.msg_iovlen = n as _;
        // SAFETY: `msg` points at `n` live iovecs over live buffers; `fd` is the caller's open
        // socket for the duration of the call.
        let sent = unsafe { libc::sendmsg(fd, &msg, flags) };
        if sent < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if sent == 0 {
            return Err(io::ErrorKind::WriteZero.into());
        }
        io::IoSlice::advance_slices(&mut rest, sent as usize);
    }
    Ok(())
}

/// `sendfile` of the whole slice; fails with `UnexpectedEof` if its file ends first.
fn send_file(fd: RawFd, slice: &FileSlice) -> io::Result<()> {
    let Some(file_fd) = slice.file.raw_fd() else {
        return Err(io::Error::other(
            "a deferred file slice without a descriptor",
        ));
    };
    let start = slice.position.as_u64();
    let end = start + u64::from(slice.length);
    let mut off = libc::off_t::try_from(start).map_err(io::Error::other)?;
    loop {
        let sent = off as u64;
        if sent >= end {
            return Ok(());
        }
        let want = (end - sent).min(1 << 30) as usize;
        // SAFETY: both descriptors are open for the call (`slice.file` keeps the file open, the
        // caller the socket); `off` is a live off_t the kernel advances by what it sent.
        let n = unsafe { libc::sendfile(fd, file_fd, &mut off, want) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!(
                    "{} ends at byte {sent}, inside the fetch answer's slice {start}..{end} \
                     being sent: truncated since the fetch read it",
                    slice.file.path().display()
                ),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::frame::{encode_fetch_response_pieces, encode_response};
    use kafka_protocol::messages::fetch_response::{FetchableTopicResponse, PartitionData};
    use kafka_protocol::messages::{ApiKey, FetchResponse, ResponseKind, TopicName};
    use kafka_protocol::protocol::StrBytes;
    use mirrorlog_index::FilePosition;
    use mirrorlog_segment::io::{OpenMode, PwriteStorage, SimStorage, Storage, StorageFile};
    use std::io::Read;
    use std::net::{TcpListener, TcpStream};
    use std::os::fd::AsRawFd;
    use std::sync::Arc;

    /// A file of `len` bytes, byte `i` being `i * 7 % 251`.
    fn file(dir: &std::path::Path, len: usize) -> Arc<dyn StorageFile> {
        let f = PwriteStorage::new()
            .open(&dir.join("00000000000000000000.log"), OpenMode::CreateNew)
            .unwrap();
        let bytes: Vec<u8> = (0..len).map(|i| (i * 7 % 251) as u8).collect();
        f.write_at(Bytes::from(bytes), 0).unwrap();
        f
    }

    fn slice(file: &Arc<dyn StorageFile>, position: u32, length: u32) -> FileSlice {
        FileSlice {
            file: file.clone(),
            position: FilePosition(position),
            length,
        }
    }

    /// A Fetch answer with one partition per records buffer.
    fn answer(records: Vec<Bytes>) -> FetchResponse {
        let mut topic = FetchableTopicResponse::default();
        topic.topic = TopicName(StrBytes::from_static_str("t"));
        for (i, r) in records.into_iter().enumerate() {
            let mut d = PartitionData::default();
            d.partition_index = i as i32;
            d.high_watermark = 99;
            d.records = Some(r);
            topic.partitions.push(d);
        }
        let mut resp = FetchResponse::default();
        resp.responses.push(topic);
        resp
    }

    /// Writes `pieces` with `files` to a loopback TCP connection; returns the write's result and
    /// every byte the peer received until the writer closed.
    fn send(pieces: &[Bytes], files: &FileRecords) -> (io::Result<()>, Vec<u8>) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let w = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (mut r, _) = l.accept().unwrap();
        let reader = std::thread::spawn(move || {
            let mut got = vec![];
            r.read_to_end(&mut got).unwrap();
            got
        });
        let res = write_with_files(w.as_raw_fd(), pieces, files);
        drop(w);
        (res, reader.join().unwrap())
    }

    #[test]
    fn an_answer_with_file_slices_is_sent_byte_for_byte_as_the_one_read_into_memory() {
        let dir = tempfile::tempdir().unwrap();
        let f = file(dir.path(), 300_000);
        // Two deferred slices (one at an odd position), one too small to defer, one in memory.
        let slices = [slice(&f, 13, 200_000), slice(&f, 200_013, 100)];
        let in_memory = Bytes::from(vec![0xabu8; 10_000]);
        let mut files = FileRecords::default();
        let first = files.defer(&slices[0]).expect("deferred");
        assert!(files.defer(&slices[1]).is_none(), "too small to defer");
        let second = files.defer(&slice(&f, 100_001, 50_000)).expect("deferred");
        let deferred = answer(vec![
            first,
            slices[1].read_all().unwrap(),
            in_memory.clone(),
            second,
        ]);
        let read = answer(vec![
            slices[0].read_all().unwrap(),
            slices[1].read_all().unwrap(),
            in_memory,
            slice(&f, 100_001, 50_000).read_all().unwrap(),
        ]);
        assert_eq!(files.bytes(), 250_000);
        for version in [4, 12, 16] {
            let want = encode_response(
                7,
                ApiKey::Fetch,
                version,
                &ResponseKind::Fetch(read.clone()),
            )
            .unwrap();
            let pieces = encode_fetch_response_pieces(7, version, &deferred).unwrap();
            let (res, got) = send(&pieces, &files);
            res.unwrap();
            assert_eq!(got.len(), want.len(), "v{version}");
            assert!(got == want[..], "v{version}: the bytes differ");
        }
    }

    #[test]
    fn a_slice_truncated_before_it_is_sent_fails_the_write_after_a_prefix_of_the_answer() {
        let dir = tempfile::tempdir().unwrap();
        let f = file(dir.path(), 100_000);
        let s = slice(&f, 0, 100_000);
        let full = answer(vec![s.read_all().unwrap()]);
        let want = encode_response(1, ApiKey::Fetch, 12, &ResponseKind::Fetch(full)).unwrap();
        let mut files = FileRecords::default();
        let deferred = answer(vec![files.defer(&s).unwrap()]);
        // The segment is truncated (a follower's divergence) after the fetch read the slice.
        f.set_len(60_000).unwrap();
        let pieces = encode_fetch_response_pieces(1, 12, &deferred).unwrap();
        let (res, got) = send(&pieces, &files);
        let err = res.expect_err("a short slice must fail the write");
        assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof, "{err}");
        // What reached the peer is the start of the true answer and no more: never a whole,
        // well-formed answer with other bytes in it.
        assert!(got.len() < want.len());
        assert!(got == want[..got.len()], "a wrong byte was sent");
        // Truncated to nothing before the send starts: only the bytes before the records go.
        f.set_len(0).unwrap();
        let (res, got) = send(&pieces, &files);
        assert_eq!(res.unwrap_err().kind(), io::ErrorKind::UnexpectedEof);
        assert!(got.len() < want.len() - 100_000 + 1);
        assert!(got == want[..got.len()]);
    }

    #[test]
    fn slices_without_a_descriptor_or_past_the_region_are_read_instead() {
        let sim = SimStorage::new();
        let dir = std::path::Path::new("/sim");
        sim.create_dir_all(dir).unwrap();
        let f = sim.open(&dir.join("0.log"), OpenMode::CreateNew).unwrap();
        f.write_at(Bytes::from(vec![1u8; 8192]), 0).unwrap();
        let mut files = FileRecords::default();
        assert!(files.defer(&slice(&f, 0, 8192)).is_none(), "no descriptor");
        assert!(files.is_empty());

        let tmp = tempfile::tempdir().unwrap();
        let f = file(tmp.path(), 8192);
        let s = slice(&f, 0, 8192);
        // Placeholders are distinct ranges of the region, until it is used up.
        let a = files.defer(&s).unwrap();
        let b = files.defer(&s).unwrap();
        assert_ne!(a.as_ptr(), b.as_ptr());
        files.used = REGION_BYTES - 4096;
        assert!(files.defer(&s).is_none(), "past the region");
        assert_eq!(files.bytes(), 2 * 8192);
    }
}
