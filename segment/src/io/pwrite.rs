//! The pwrite backend: `std::fs` plus `pwrite`/`pwritev`/`pread`/`fdatasync`, one system call per
//! operation (a `pwritev` covers up to `IOV_MAX` buffers). The fallback when io_uring is not
//! allowed, and the baseline every benchmark compares against.

use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;

use super::{
    IoError, IoOp, IoResult, MAX_IO_BYTES, OpenMode, Storage, StorageFile, SyncFailure, real_fs,
    to_off_t,
};

/// The most buffers one `pwritev` takes (Linux's `IOV_MAX`, `UIO_MAXIOV`).
const IOV_MAX: usize = 1024;

/// Plain positioned system calls on `std::fs::File`s.
#[derive(Debug, Default, Clone, Copy)]
pub struct PwriteStorage {
    _private: (),
}

impl PwriteStorage {
    /// The backend's [`Storage::name`].
    pub const NAME: &'static str = "pwrite";

    /// The pwrite backend (stateless: every file is its own `File`).
    pub fn new() -> Self {
        Self { _private: () }
    }
}

impl Storage for PwriteStorage {
    fn name(&self) -> &'static str {
        Self::NAME
    }

    fn open(&self, path: &Path, mode: OpenMode) -> IoResult<Arc<dyn StorageFile>> {
        let file = real_fs::open(path, mode)?;
        Ok(Arc::new(PwriteFile {
            file,
            path: path.to_path_buf(),
            sync_failure: SyncFailure::default(),
        }))
    }

    fn rename(&self, from: &Path, to: &Path) -> IoResult<()> {
        real_fs::rename(from, to)
    }

    fn remove(&self, path: &Path) -> IoResult<()> {
        real_fs::remove(path)
    }

    fn exists(&self, path: &Path) -> bool {
        real_fs::exists(path)
    }

    fn sync_dir(&self, dir: &Path) -> IoResult<()> {
        real_fs::sync_dir(dir)
    }

    fn list_dir(&self, dir: &Path) -> IoResult<Vec<PathBuf>> {
        real_fs::list_dir(dir)
    }

    fn create_dir_all(&self, dir: &Path) -> IoResult<()> {
        real_fs::create_dir_all(dir)
    }
}

/// One file of the pwrite backend.
#[derive(Debug)]
struct PwriteFile {
    file: File,
    path: PathBuf,
    /// The file's first failed sync, returned by every later one (module docs of `io`).
    sync_failure: SyncFailure,
}

impl PwriteFile {
    fn err(&self, op: IoOp, e: io::Error) -> IoError {
        IoError::new(op, &self.path, e)
    }
}

impl StorageFile for PwriteFile {
    fn path(&self) -> &Path {
        &self.path
    }

    fn write_at(&self, buf: Bytes, pos: u64) -> IoResult<()> {
        to_off_t(pos.saturating_add(buf.len() as u64))
            .and_then(|_| self.file.write_all_at(&buf, pos))
            .map_err(|e| self.err(IoOp::WriteAt, e))
    }

    fn write_all_at(&self, bufs: &[Bytes], pos: u64, durable: bool) -> IoResult<()> {
        match bufs {
            [] => {}
            [one] => self.write_at(one.clone(), pos)?,
            many => pwritev_all(self.file.as_raw_fd(), many, pos)
                .map_err(|e| self.err(IoOp::WriteAt, e))?,
        }
        if durable {
            self.sync_data()?;
        }
        Ok(())
    }

    fn read_at(&self, buf: &mut [u8], pos: u64) -> IoResult<usize> {
        to_off_t(pos).map_err(|e| self.err(IoOp::ReadAt, e))?;
        let len = buf.len().min(MAX_IO_BYTES);
        loop {
            match self.file.read_at(&mut buf[..len], pos) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                r => return r.map_err(|e| self.err(IoOp::ReadAt, e)),
            }
        }
    }

    fn read_exact_vec(&self, len: usize, pos: u64) -> IoResult<Vec<u8>> {
        let mut v: Vec<u8> = Vec::with_capacity(len);
        while v.len() < len {
            let done = v.len();
            let at = to_off_t(pos + done as u64).map_err(|e| self.err(IoOp::ReadAt, e))?;
            let want = (len - done).min(MAX_IO_BYTES);
            // SAFETY: the allocation has room for `len` bytes and `done < len`, so `want` bytes
            // from `done` on are inside it; `pread` writes at most `want` bytes there, and the
            // length grows only by the count it reports written, so every byte below the length
            // is initialised.
            let n = unsafe {
                libc::pread(
                    self.file.as_raw_fd(),
                    v.as_mut_ptr().add(done).cast(),
                    want,
                    at,
                )
            };
            match n {
                0 => return Err(super::short_read(&self.path, len, pos, done)),
                n if n < 0 => {
                    let e = io::Error::last_os_error();
                    if e.kind() != io::ErrorKind::Interrupted {
                        return Err(self.err(IoOp::ReadAt, e));
                    }
                }
                // SAFETY: see above: `done + n` bytes are initialised and within capacity.
                n => unsafe { v.set_len(done + n as usize) },
            }
        }
        Ok(v)
    }

    fn sync_data(&self) -> IoResult<()> {
        self.sync_failure.run(|| {
            self.file
                .sync_data()
                .map_err(|e| self.err(IoOp::SyncData, e))
        })
    }

    fn set_len(&self, len: u64) -> IoResult<()> {
        real_fs::set_len(&self.file, &self.path, len)
    }

    fn len(&self) -> IoResult<u64> {
        real_fs::len(&self.file, &self.path)
    }

    fn raw_fd(&self) -> Option<RawFd> {
        Some(self.file.as_raw_fd())
    }

    fn data_range(&self, pos: u64) -> IoResult<Option<(u64, u64)>> {
        super::data_range_of(self.file.as_raw_fd(), &self.path, pos)
    }
}

/// Writes `bufs` back to back from `pos` with as few `pwritev` calls as the kernel allows,
/// resubmitting after short writes and `EINTR`.
fn pwritev_all(fd: RawFd, bufs: &[Bytes], pos: u64) -> io::Result<()> {
    let total: u64 = bufs.iter().map(|b| b.len() as u64).sum();
    to_off_t(pos.saturating_add(total))?;
    let mut iovs: Vec<libc::iovec> = bufs
        .iter()
        .filter(|b| !b.is_empty())
        .map(|b| libc::iovec {
            iov_base: b.as_ptr().cast_mut().cast(),
            iov_len: b.len(),
        })
        .collect();
    let mut start = 0;
    let mut pos = pos;
    while start < iovs.len() {
        let count = (iovs.len() - start).min(IOV_MAX);
        let off = to_off_t(pos)?;
        // SAFETY: `iovs[start..start + count]` is in bounds and each iovec points into a `Bytes`
        // of `bufs` (advanced by `advance` no further than its length), which stays borrowed and
        // alive for this whole call; the kernel only reads from them.
        let n = unsafe { libc::pwritev(fd, iovs[start..].as_ptr(), count as libc::c_int, off) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::WriteZero,
                "pwritev wrote nothing",
            ));
        }
        let n = n as usize;
        pos += n as u64;
        advance(&mut iovs, &mut start, n);
    }
    Ok(())
}

/// Consumes `n` written bytes from the iovecs beginning at `start`, moving `start` past the fully
/// written ones and trimming the partly written one.
fn advance(iovs: &mut [libc::iovec], start: &mut usize, mut n: usize) {
    while n > 0 {
        let iov = &mut iovs[*start];
        if n >= iov.iov_len {
            n -= iov.iov_len;
            *start += 1;
        } else {
            iov.iov_base = iov.iov_base.cast::<u8>().wrapping_add(n).cast();
            iov.iov_len -= n;
            n = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn iov(base: usize, len: usize) -> libc::iovec {
        libc::iovec {
            iov_base: base as *mut libc::c_void,
            iov_len: len,
        }
    }

    #[test]
    fn advance_skips_whole_buffers_and_trims_a_partial_one() {
        let mut iovs = [iov(0x1000, 10), iov(0x2000, 20), iov(0x3000, 30)];
        let mut start = 0;
        advance(&mut iovs, &mut start, 15);
        assert_eq!(start, 1);
        assert_eq!(iovs[1].iov_base as usize, 0x2005);
        assert_eq!(iovs[1].iov_len, 15);
        advance(&mut iovs, &mut start, 15);
        assert_eq!(start, 2);
        assert_eq!(iovs[2].iov_len, 30);
        advance(&mut iovs, &mut start, 30);
        assert_eq!(start, 3);
    }

    #[test]
    fn pwritev_writes_more_buffers_than_iov_max_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let file = File::create(&path).unwrap();
        let bufs: Vec<Bytes> = (0..(IOV_MAX * 2 + 7))
            .map(|i| Bytes::from(vec![(i % 251) as u8; 1 + i % 5]))
            .collect();
        pwritev_all(file.as_raw_fd(), &bufs, 3).unwrap();
        let got = std::fs::read(&path).unwrap();
        let mut want = vec![0u8; 3];
        for b in &bufs {
            want.extend_from_slice(b);
        }
        assert_eq!(got, want);
    }

    #[test]
    fn pwritev_skips_empty_buffers() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let file = File::create(&path).unwrap();
        let bufs = [
            Bytes::new(),
            Bytes::from_static(b"ab"),
            Bytes::new(),
            Bytes::from_static(b"cd"),
        ];
        pwritev_all(file.as_raw_fd(), &bufs, 0).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"abcd");
    }

    #[test]
    fn write_all_at_past_off_t_fails_with_invalid_input() {
        let dir = tempfile::tempdir().unwrap();
        let storage = PwriteStorage::new();
        let f = storage
            .open(&dir.path().join("f"), OpenMode::CreateNew)
            .unwrap();
        let bufs = [Bytes::from_static(b"a"), Bytes::from_static(b"b")];
        let err = f.write_all_at(&bufs, u64::MAX - 1, false).unwrap_err();
        assert_eq!(err.op, IoOp::WriteAt);
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
    }
}
