//! The I/O backend trait and its implementations (io_uring, pwrite, simulated).
//!
//! Every byte `segment` reads or writes goes through [`Storage`] (directory-level operations) and
//! [`StorageFile`] (positioned operations on one open file). The trait is deliberately narrow:
//! positioned writes of owned buffers, positioned reads, `fdatasync`, `set_len`, and the
//! metadata operations a log needs (rename, remove, list, directory sync). Three implementations:
//!
//! | backend | type | use |
//! |---|---|---|
//! | `io_uring` | [`UringStorage`] | batched submissions; a durable batch is one submission of linked writes followed by a linked `fdatasync` |
//! | `pwrite` | [`PwriteStorage`] | plain `pwrite`/`pwritev`/`fdatasync`: the fallback, and the baseline of every benchmark |
//! | `simulated` | [`SimStorage`] | in memory, with a live-vs-durable model, fault injection and crashes that keep only synced bytes |
//! | `direct` | [`DirectStorage`] | writable `.log` files appended with `O_DIRECT` through one io_uring reactor (preallocated, aligned chunks, tail cache); everything else through a wrapped buffered backend |
//! | zero-ahead (a wrapper, named as the backend it wraps) | [`ZeroAheadStorage`] | writable `.log` files of a buffered backend with written zeros kept ahead of their appends, so a durable append's `fdatasync` commits no metadata (`log.preallocate`) |
//!
//! All three behave the same for the same calls; `segment/tests/io_backends.rs` runs one
//! behavioural suite against each of them.
//!
//! # Choosing a backend
//!
//! [`default_storage`] returns **pwrite**, the backend the `segment-append` benchmark measured as
//! fastest for buffered appends: on this machine (ext4 on a virtio disk, kernel 6.18) a buffered
//! 16 KiB append through io_uring ran at 0.12x raw pwrite, because ext4 hands every buffered
//! io_uring write to a kernel worker thread; coalesced 1 MiB appends reached only 0.72x raw 1 MiB
//! pwrites, and durable 1 MiB appends gained nothing (0.91x against pwrite's 0.94x). io_uring
//! pays off only for O_DIRECT writes at queue depth (about 3x faster), the direct-I/O path of a
//! later issue. The environment variable **`MIRRORLOG_IO`** forces a choice:
//! `MIRRORLOG_IO=pwrite` or `MIRRORLOG_IO=io_uring` (when io_uring is forced but unavailable the
//! process logs an error and falls back to pwrite rather than refusing to start; any other value
//! is ignored with a warning). [`storage_by_name`] builds a backend by its [`Storage::name`].
//! Both stay selectable, and the choice is a value (`Arc<dyn Storage>`), not a type parameter,
//! so the benchmark can compare them in one run.
//!
//! # Errors
//!
//! Every failure is an [`IoError`]: the operation ([`IoOp`]), the file or directory it was about,
//! and the operating-system error, never dropped. A rename names its source path.
//!
//! # Durability
//!
//! A file's bytes are durable once a sync of them returned `Ok`. **A failed sync is fatal for
//! the open file**: after a failed `fdatasync` Linux reports the failed write-back once per open
//! file description and drops the dirty pages, so the next sync of the file — the group commit's
//! next round, a segment flush, a roll's seal — could return `Ok` for bytes that never reached
//! the disk (PostgreSQL and Kafka likewise treat a failed `fsync` as fatal). Every backend's
//! [`StorageFile`] therefore remembers its first failed sync and answers every later one with a
//! copy of that error, without syncing ([`StorageFile::sync_data`]); an atomic flag is all a
//! healthy file checks. Syncs of one file run one at a time, so two overlapping syncs cannot
//! split the one report between them. Writes are still accepted: the file's owner (a segment)
//! poisons itself and the log recovers from what is durable.

use std::fmt;
use std::io;
use std::os::fd::RawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use bytes::Bytes;

/// The directory-level [`Storage`] methods of a wrapper backend (one with an `inner` field
/// holding the wrapped backend, e.g. `Arc<dyn Storage>`, that changes only how some files are
/// written or synced), passed to `inner` unchanged. Use it inside `impl Storage for …` beside
/// `name` and `open`; it names every type by its full path, so the caller needs no imports.
/// The crate's own wrappers ([`ZeroAheadStorage`], [`DirectStorage`]) and test backends that
/// observe or fault a backend's files use it.
#[macro_export]
macro_rules! delegate_directory_ops {
    () => {
        fn rename(
            &self,
            from: &::std::path::Path,
            to: &::std::path::Path,
        ) -> $crate::io::IoResult<()> {
            self.inner.rename(from, to)
        }

        fn remove(&self, path: &::std::path::Path) -> $crate::io::IoResult<()> {
            self.inner.remove(path)
        }

        fn exists(&self, path: &::std::path::Path) -> bool {
            self.inner.exists(path)
        }

        fn sync_dir(&self, dir: &::std::path::Path) -> $crate::io::IoResult<()> {
            self.inner.sync_dir(dir)
        }

        fn list_dir(
            &self,
            dir: &::std::path::Path,
        ) -> $crate::io::IoResult<::std::vec::Vec<::std::path::PathBuf>> {
            self.inner.list_dir(dir)
        }

        fn create_dir_all(&self, dir: &::std::path::Path) -> $crate::io::IoResult<()> {
            self.inner.create_dir_all(dir)
        }
    };
}

mod direct;
mod pwrite;
mod sim;
mod uring;
mod zero_ahead;

pub use direct::{DIRECT_BLOCK, DirectConfig, DirectDurability, DirectFile, DirectStorage};
pub use pwrite::PwriteStorage;
pub use sim::{Fault, FaultKind, SimFile, SimStorage, TornTail};
pub use uring::{UringConfig, UringStorage};
pub use zero_ahead::{ZeroAheadConfig, ZeroAheadFile, ZeroAheadStorage};

/// The result of every storage operation.
pub type IoResult<T> = Result<T, IoError>;

/// A failed storage operation: names the operation and the file; never drops the source.
#[derive(Debug, thiserror::Error)]
#[error("{op} {path}: {source}", path = .path.display())]
pub struct IoError {
    /// What was being done.
    pub op: IoOp,
    /// The file or directory it was done to (for a rename: the source path).
    pub path: PathBuf,
    /// The operating-system error (or the simulated one).
    #[source]
    pub source: io::Error,
}

impl IoError {
    /// Builds an error for `op` on `path`.
    pub fn new(op: IoOp, path: impl Into<PathBuf>, source: io::Error) -> Self {
        Self {
            op,
            path: path.into(),
            source,
        }
    }

    /// The kind of the underlying `std::io::Error`.
    pub fn kind(&self) -> io::ErrorKind {
        self.source.kind()
    }

    /// A copy of this error, for one more caller: the same op, path, error kind and OS error
    /// code (a non-OS source keeps its kind and message). `std::io::Error` is not `Clone`.
    pub fn copy(&self) -> IoError {
        let source = match self.source.raw_os_error() {
            Some(code) => io::Error::from_raw_os_error(code),
            None => io::Error::new(self.source.kind(), self.source.to_string()),
        };
        IoError::new(self.op, self.path.clone(), source)
    }

    /// Whether the device ran out of space (`ENOSPC`).
    pub fn is_no_space(&self) -> bool {
        self.source.raw_os_error() == Some(libc::ENOSPC)
            || self.source.kind() == io::ErrorKind::StorageFull
    }
}

/// The storage operation an [`IoError`] is about. Displays in lowercase snake case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IoOp {
    /// Opening an existing file ([`OpenMode::Read`], [`OpenMode::ReadWrite`]).
    Open,
    /// Opening with creation ([`OpenMode::CreateOrOpen`], [`OpenMode::CreateNew`]).
    Create,
    /// A positioned write (`write_at`, and the write part of `write_all_at`).
    WriteAt,
    /// A positioned read.
    ReadAt,
    /// `fdatasync` (`sync_data`, and the sync part of a durable `write_all_at`).
    SyncData,
    /// Truncation or extension.
    SetLen,
    /// Reading the file's length.
    Len,
    /// Renaming (the error names the source path).
    Rename,
    /// Removing a file.
    Remove,
    /// `fsync` of a directory, making creations, renames and removals in it durable.
    SyncDir,
    /// Listing a directory.
    ListDir,
    /// Creating a directory and its missing parents.
    CreateDir,
}

impl IoOp {
    /// The operation's lowercase name, as displayed.
    pub fn as_str(self) -> &'static str {
        match self {
            IoOp::Open => "open",
            IoOp::Create => "create",
            IoOp::WriteAt => "write_at",
            IoOp::ReadAt => "read_at",
            IoOp::SyncData => "sync_data",
            IoOp::SetLen => "set_len",
            IoOp::Len => "len",
            IoOp::Rename => "rename",
            IoOp::Remove => "remove",
            IoOp::SyncDir => "sync_dir",
            IoOp::ListDir => "list_dir",
            IoOp::CreateDir => "create_dir",
        }
    }
}

impl fmt::Display for IoOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How [`Storage::open`] opens a file. Every mode but `Read` opens read-write; none truncates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenMode {
    /// Read-only; the file must exist.
    Read,
    /// Read-write; the file must exist.
    ReadWrite,
    /// Read-write; created (empty) if absent, kept as is (not truncated) if present.
    CreateOrOpen,
    /// Read-write; the file must not exist (`AlreadyExists` otherwise).
    CreateNew,
}

impl OpenMode {
    /// The operation an error of this open is reported as.
    pub fn op(self) -> IoOp {
        match self {
            OpenMode::Read | OpenMode::ReadWrite => IoOp::Open,
            OpenMode::CreateOrOpen | OpenMode::CreateNew => IoOp::Create,
        }
    }

    /// Whether a file opened this way accepts writes.
    pub fn is_writable(self) -> bool {
        !matches!(self, OpenMode::Read)
    }
}

/// Directory-level operations of one I/O backend. Shared as `Arc<dyn Storage>`.
///
/// Durability: a creation, rename or removal is durable only after [`Storage::sync_dir`] of the
/// directory holding the name; a file's bytes only after [`StorageFile::sync_data`] (or a durable
/// [`StorageFile::write_all_at`]). The simulated backend enforces exactly this and no more.
pub trait Storage: Send + Sync + fmt::Debug {
    /// `"io_uring"`, `"pwrite"` or `"simulated"`.
    fn name(&self) -> &'static str;
    /// Opens `path` as `mode` says; the parent directory must exist.
    fn open(&self, path: &Path, mode: OpenMode) -> IoResult<Arc<dyn StorageFile>>;
    /// Atomically renames `from` to `to`, replacing `to` if it exists. Open handles follow the
    /// file.
    fn rename(&self, from: &Path, to: &Path) -> IoResult<()>;
    /// Removes the file `path` (`NotFound` if absent). Open handles keep working.
    fn remove(&self, path: &Path) -> IoResult<()>;
    /// Whether a file or directory exists at `path` (an error to find out counts as absent).
    fn exists(&self, path: &Path) -> bool;
    /// Makes the creations, renames and removals of names in `dir` durable.
    fn sync_dir(&self, dir: &Path) -> IoResult<()>;
    /// The full paths of the entries (files and directories) of `dir`, sorted.
    fn list_dir(&self, dir: &Path) -> IoResult<Vec<PathBuf>>;
    /// Creates `dir` and any missing parents. Each directory created is a new name in its
    /// parent, durable only after [`Storage::sync_dir`] of that parent
    /// ([`create_dir_all_durably`] does both).
    fn create_dir_all(&self, dir: &Path) -> IoResult<()>;
}

/// Creates `dir` and any missing parents through `storage`, then syncs the parent of each
/// directory it created, from the top down, so that a crash keeps the whole chain (as Kafka's
/// `createAndValidateLogDirs` flushes the parent of a data directory it had to create). A
/// directory that already existed costs no sync.
///
/// # Errors
/// The first failed creation or sync.
pub fn create_dir_all_durably(storage: &dyn Storage, dir: &Path) -> IoResult<()> {
    let missing: Vec<&Path> = dir
        .ancestors()
        .take_while(|a| !a.as_os_str().is_empty() && !storage.exists(a))
        .collect();
    storage.create_dir_all(dir)?;
    for created in missing.iter().rev() {
        let parent = match created.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        storage.sync_dir(parent)?;
    }
    Ok(())
}

/// The error of a read that met the end of `path` after `done` of `len` bytes at `pos`.
pub(crate) fn short_read(path: &Path, len: usize, pos: u64, done: usize) -> IoError {
    IoError::new(
        IoOp::ReadAt,
        path,
        io::Error::new(
            io::ErrorKind::UnexpectedEof,
            format!("file ends before {len} bytes at position {pos} (read {done})"),
        ),
    )
}

/// The first failed sync of one open file, so that no later sync of it reports success (module
/// docs: "Durability"). Every backend's file syncs through [`SyncFailure::run`].
#[derive(Debug, Default)]
pub(crate) struct SyncFailure {
    /// Set once `first` holds an error: checked first, so a failed file costs no lock.
    failed: AtomicBool,
    /// The first failure. Also held across each sync: two overlapping syncs of one open file
    /// description would split the kernel's one report of a failed write-back between them, so
    /// the one answered `Ok` could return before the other recorded the failure.
    first: Mutex<Option<IoError>>,
}

impl SyncFailure {
    /// `Err` (a copy of the first failure) if a sync of the file failed.
    pub(crate) fn check(&self) -> IoResult<()> {
        if !self.failed.load(Ordering::Acquire) {
            return Ok(());
        }
        match &*self.lock() {
            Some(e) => Err(e.copy()),
            None => Ok(()),
        }
    }

    /// Runs `sync` (one sync of the file, possibly after writes) unless an earlier one failed,
    /// in which case it returns a copy of that failure without running. A [`IoOp::SyncData`]
    /// error of `sync` is remembered; its other errors (a write's) are only returned.
    pub(crate) fn run(&self, sync: impl FnOnce() -> IoResult<()>) -> IoResult<()> {
        self.check()?;
        let mut first = self.lock();
        if let Some(e) = &*first {
            return Err(e.copy());
        }
        let result = sync();
        if let Err(e) = &result
            && e.op == IoOp::SyncData
        {
            *first = Some(e.copy());
            self.failed.store(true, Ordering::Release);
        }
        result
    }

    /// A durable write: `write(true)` writes and then syncs (one submission where the backend
    /// links them) through [`run`](Self::run); after a failed sync, `write(false)` still writes
    /// and the earlier failure is returned.
    pub(crate) fn durable_write(&self, write: impl Fn(bool) -> IoResult<()>) -> IoResult<()> {
        if let Err(e) = self.check() {
            // Writes still go (the owner stops using the file); only the sync is refused.
            write(false)?;
            return Err(e);
        }
        self.run(|| write(true))
    }

    fn lock(&self) -> MutexGuard<'_, Option<IoError>> {
        self.first.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Positioned operations on one open file. Shared as `Arc<dyn StorageFile>` across threads: every
/// method takes `&self` and is safe to call concurrently (writes to overlapping ranges race as
/// they would with `pwrite`).
pub trait StorageFile: Send + Sync + fmt::Debug {
    /// The path the file was opened at (a later rename does not change it).
    fn path(&self) -> &Path;

    /// Writes the whole buffer at `pos` (short writes are resubmitted on real backends).
    ///
    /// Takes an owned buffer: io_uring needs the memory to live until completion, and callers
    /// must not have to copy to give it that.
    fn write_at(&self, buf: Bytes, pos: u64) -> IoResult<()>;

    /// Writes `bufs` back to back starting at `pos`, in one submission where the backend can
    /// (io_uring: one SQE per buffer submitted together; pwrite: `pwritev`). When `durable`, an
    /// `fdatasync` follows — on io_uring linked after the writes (`IOSQE_IO_LINK`), so it runs only
    /// once they completed. Returns when everything completed. Errors of the write part are
    /// [`IoOp::WriteAt`], of the sync part [`IoOp::SyncData`].
    fn write_all_at(&self, bufs: &[Bytes], pos: u64, durable: bool) -> IoResult<()>;

    /// Reads into `buf` at `pos`; returns the number of bytes read, short (or 0) at end of file.
    fn read_at(&self, buf: &mut [u8], pos: u64) -> IoResult<usize>;

    /// Fills `buf` from `pos`; `UnexpectedEof` if the file ends first.
    fn read_exact_at(&self, buf: &mut [u8], pos: u64) -> IoResult<()> {
        let mut done = 0;
        while done < buf.len() {
            let n = self.read_at(&mut buf[done..], pos + done as u64)?;
            if n == 0 {
                return Err(short_read(self.path(), buf.len(), pos, done));
            }
            done += n;
        }
        Ok(())
    }

    /// Reads exactly `len` bytes at `pos` into a new buffer; `UnexpectedEof` if the file ends
    /// first. The default zero-fills the buffer and calls
    /// [`read_exact_at`](Self::read_exact_at); a backend with a descriptor reads straight into
    /// the uninitialised allocation instead (a fetch answer's read then costs no memset).
    fn read_exact_vec(&self, len: usize, pos: u64) -> IoResult<Vec<u8>> {
        let mut v = vec![0u8; len];
        self.read_exact_at(&mut v, pos)?;
        Ok(v)
    }

    /// `fdatasync`: the bytes written so far (and the length) become durable.
    ///
    /// **A failure is sticky**: once a sync of this file failed (this call, the sync part of a
    /// durable [`write_all_at`](Self::write_all_at), or a sync the backend makes of its own,
    /// such as [`finish_appends`](Self::finish_appends)), every later sync of it returns a copy
    /// of that error (same op, path and OS error) without syncing, in every backend. After a
    /// failed `fdatasync` Linux reports the failed write-back once per open file description
    /// and drops the pages, so a later sync could return `Ok` for bytes that were lost. Writes
    /// are still accepted; the file's owner must stop trusting it (a segment poisons itself).
    /// Syncs of one file run one at a time, so an `Ok` is never answered while an overlapping
    /// sync of the file is failing.
    fn sync_data(&self) -> IoResult<()>;

    /// Truncates or extends (with zeros) the file to `len` bytes.
    fn set_len(&self, len: u64) -> IoResult<()>;

    /// The file's current length in bytes.
    fn len(&self) -> IoResult<u64>;

    /// Whether the file is empty.
    fn is_empty(&self) -> IoResult<bool> {
        Ok(self.len()? == 0)
    }

    /// The first range of data at or after `pos`, as `[start, end)` with `end` where the next
    /// hole begins (`lseek` `SEEK_DATA`/`SEEK_HOLE`), or `None` when only holes follow: the file
    /// reads as zeros there without storing them (never written, or preallocated and unwritten).
    /// Lets recovery skip a preallocated tail without reading it. The default (and a file system
    /// without hole reporting) says everything from `pos` to the end is data.
    fn data_range(&self, pos: u64) -> IoResult<Option<(u64, u64)>> {
        let len = self.len()?;
        Ok((pos < len).then_some((pos, len)))
    }

    /// Whether concurrent [`sync_data`](Self::sync_data) calls on this file already share the
    /// device work among themselves — every caller waits for its own bytes, and one write or
    /// sync serves all who wait for it — so callers need no group commit in front (the direct
    /// backend's `.log` files). `false` by default: there each call is one `fdatasync`.
    fn shares_syncs(&self) -> bool {
        false
    }

    /// No more appends will come (the segment is sealed): anything still pending is written,
    /// and space preallocated beyond the file's length is released, durably, so the file on
    /// disk is exactly its length. A no-op on backends that do not preallocate (all but
    /// [`DirectStorage`]'s `.log` files).
    fn finish_appends(&self) -> IoResult<()> {
        Ok(())
    }

    /// The OS file descriptor, for zero-copy sends (`sendfile`); `None` on the simulated backend.
    /// Valid as long as this handle lives.
    fn raw_fd(&self) -> Option<RawFd>;
}

/// The environment variable that forces a backend: `pwrite` or `io_uring`.
pub const IO_BACKEND_ENV: &str = "MIRRORLOG_IO";

/// The backend to use when nothing else says: pwrite, as measured (see the module docs).
/// [`IO_BACKEND_ENV`] (`MIRRORLOG_IO=pwrite|io_uring`) forces a choice.
pub fn default_storage() -> Arc<dyn Storage> {
    let forced = std::env::var(IO_BACKEND_ENV).ok();
    select_storage(forced.as_deref())
}

/// The backend called `name` ([`Storage::name`]): `"io_uring"` (`None` when the kernel does not
/// allow it), `"pwrite"`, or `"simulated"` (a fresh, empty in-memory file system).
pub fn storage_by_name(name: &str) -> Option<Arc<dyn Storage>> {
    match name {
        UringStorage::NAME => UringStorage::new()
            .ok()
            .map(|s| Arc::new(s) as Arc<dyn Storage>),
        PwriteStorage::NAME => Some(Arc::new(PwriteStorage::new())),
        SimStorage::NAME => Some(Arc::new(SimStorage::new())),
        _ => None,
    }
}

/// [`default_storage`] with the environment variable's value passed in (testable without
/// touching the process environment).
fn select_storage(forced: Option<&str>) -> Arc<dyn Storage> {
    match forced {
        Some(PwriteStorage::NAME) => return Arc::new(PwriteStorage::new()),
        Some(UringStorage::NAME) => match UringStorage::new() {
            Ok(s) => return Arc::new(s),
            Err(e) => {
                tracing::error!(
                    error = %e,
                    "{IO_BACKEND_ENV}=io_uring but io_uring is unavailable; using pwrite"
                );
                return Arc::new(PwriteStorage::new());
            }
        },
        Some(other) => tracing::warn!(
            value = other,
            "ignoring {IO_BACKEND_ENV}: expected `pwrite` or `io_uring`"
        ),
        None => {}
    }
    // Measured (`mirrorlog-bench segment-append`): buffered 16 KiB appends through io_uring ran
    // at 0.12x raw pwrite on this machine's ext4 (every buffered io_uring write is handed to a
    // kernel worker thread), and durable 1 MiB appends gained nothing (0.91x vs 0.94x). So the
    // buffered default is pwrite; io_uring stays selectable for comparison and for the direct-I/O
    // path where it wins.
    Arc::new(PwriteStorage::new())
}

/// The largest single read or write submitted to the kernel. Linux transfers at most
/// `0x7ffff000` bytes per call anyway; splitting at 1 GiB keeps lengths within `u32` for io_uring
/// and every piece a whole number of pages.
pub(crate) const MAX_IO_BYTES: usize = 1 << 30;

/// Converts a file position to `off_t`, or `EINVAL` when it does not fit.
pub(crate) fn to_off_t(pos: u64) -> io::Result<libc::off_t> {
    libc::off_t::try_from(pos).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))
}

/// [`StorageFile::data_range`] of an open descriptor: `SEEK_DATA` from `pos`, then `SEEK_HOLE`
/// from there.
pub(crate) fn data_range_of(fd: RawFd, path: &Path, pos: u64) -> IoResult<Option<(u64, u64)>> {
    let err = |e| IoError::new(IoOp::ReadAt, path, e);
    let off = to_off_t(pos).map_err(err)?;
    // SAFETY: plain system call on a descriptor the caller keeps open.
    let start = unsafe { libc::lseek(fd, off, libc::SEEK_DATA) };
    if start < 0 {
        let e = io::Error::last_os_error();
        return match e.raw_os_error() {
            Some(libc::ENXIO) => Ok(None),
            _ => Err(err(e)),
        };
    }
    // SAFETY: as above.
    let end = unsafe { libc::lseek(fd, start, libc::SEEK_HOLE) };
    if end < 0 {
        return Err(err(io::Error::last_os_error()));
    }
    Ok(Some((start as u64, end as u64)))
}

/// `std::fs` counterparts of the directory-level operations, shared by the two real backends.
pub(crate) mod real_fs {
    use std::fs::{File, OpenOptions};
    use std::path::{Path, PathBuf};

    use super::{IoError, IoOp, IoResult, OpenMode};

    pub(crate) fn open(path: &Path, mode: OpenMode) -> IoResult<File> {
        let mut opts = OpenOptions::new();
        opts.read(true);
        match mode {
            OpenMode::Read => {}
            OpenMode::ReadWrite => {
                opts.write(true);
            }
            OpenMode::CreateOrOpen => {
                opts.write(true).create(true);
            }
            OpenMode::CreateNew => {
                opts.write(true).create_new(true);
            }
        }
        opts.open(path)
            .map_err(|e| IoError::new(mode.op(), path, e))
    }

    pub(crate) fn rename(from: &Path, to: &Path) -> IoResult<()> {
        std::fs::rename(from, to).map_err(|e| IoError::new(IoOp::Rename, from, e))
    }

    pub(crate) fn remove(path: &Path) -> IoResult<()> {
        std::fs::remove_file(path).map_err(|e| IoError::new(IoOp::Remove, path, e))
    }

    pub(crate) fn exists(path: &Path) -> bool {
        path.try_exists().unwrap_or(false)
    }

    pub(crate) fn sync_dir(dir: &Path) -> IoResult<()> {
        File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(|e| IoError::new(IoOp::SyncDir, dir, e))
    }

    pub(crate) fn list_dir(dir: &Path) -> IoResult<Vec<PathBuf>> {
        let err = |e| IoError::new(IoOp::ListDir, dir, e);
        let mut out = Vec::new();
        for entry in std::fs::read_dir(dir).map_err(err)? {
            out.push(entry.map_err(err)?.path());
        }
        out.sort();
        Ok(out)
    }

    pub(crate) fn create_dir_all(dir: &Path) -> IoResult<()> {
        std::fs::create_dir_all(dir).map_err(|e| IoError::new(IoOp::CreateDir, dir, e))
    }

    pub(crate) fn set_len(file: &File, path: &Path, len: u64) -> IoResult<()> {
        file.set_len(len)
            .map_err(|e| IoError::new(IoOp::SetLen, path, e))
    }

    pub(crate) fn len(file: &File, path: &Path) -> IoResult<u64> {
        file.metadata()
            .map(|m| m.len())
            .map_err(|e| IoError::new(IoOp::Len, path, e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn io_op_displays_in_lowercase() {
        let all = [
            IoOp::Open,
            IoOp::Create,
            IoOp::WriteAt,
            IoOp::ReadAt,
            IoOp::SyncData,
            IoOp::SetLen,
            IoOp::Len,
            IoOp::Rename,
            IoOp::Remove,
            IoOp::SyncDir,
            IoOp::ListDir,
            IoOp::CreateDir,
        ];
        for op in all {
            let s = op.to_string();
            assert_eq!(s, s.to_lowercase());
        }
        assert_eq!(IoOp::WriteAt.to_string(), "write_at");
        assert_eq!(IoOp::SyncDir.to_string(), "sync_dir");
    }

    #[test]
    fn io_error_display_names_op_path_and_source() {
        let e = IoError::new(
            IoOp::WriteAt,
            "/data/t-0/00000000000000000000.log",
            io::Error::from_raw_os_error(libc::EIO),
        );
        let s = e.to_string();
        assert!(
            s.starts_with("write_at /data/t-0/00000000000000000000.log: "),
            "{s}"
        );
        assert!(std::error::Error::source(&e).is_some());
        assert!(!e.is_no_space());
    }

    #[test]
    fn a_copied_error_keeps_op_path_kind_and_os_code() {
        let e = IoError::new(
            IoOp::SyncData,
            "/d/x.log",
            io::Error::from_raw_os_error(libc::EIO),
        );
        let c = e.copy();
        assert_eq!(c.op, IoOp::SyncData);
        assert_eq!(c.path, PathBuf::from("/d/x.log"));
        assert_eq!(c.kind(), e.kind());
        assert_eq!(c.source.raw_os_error(), Some(libc::EIO));
        let custom = IoError::new(IoOp::SyncData, "/d/y", io::Error::other("boom"));
        let c = custom.copy();
        assert_eq!(c.kind(), io::ErrorKind::Other);
        assert!(c.to_string().contains("boom"));
    }

    /// A sim file with unsynced bytes whose next sync fails as Linux's does (`SyncFails`).
    fn file_whose_next_sync_fails(sim: &SimStorage) -> Arc<dyn StorageFile> {
        sim.create_dir_all(Path::new("/d")).unwrap();
        let f = sim
            .open(Path::new("/d/0.log"), OpenMode::CreateNew)
            .unwrap();
        f.write_at(Bytes::from_static(b"lost"), 0).unwrap();
        sim.inject(Fault::new(IoOp::SyncData, FaultKind::SyncFails).on_path("0.log"));
        f
    }

    #[test]
    fn a_failed_sync_fails_every_later_sync_of_the_file() {
        let sim = SimStorage::new();
        let f = file_whose_next_sync_fails(&sim);
        let first = f.sync_data().unwrap_err();
        assert_eq!(first.source.raw_os_error(), Some(libc::EIO));
        // The pages are gone and the fault fired: a fresh sync would succeed, with nothing to
        // write. It must not report the lost bytes durable.
        let syncs = sim.syncs_completed();
        let again = f.sync_data().unwrap_err();
        assert_eq!(
            (again.op, again.path.clone(), again.source.raw_os_error()),
            (first.op, first.path.clone(), Some(libc::EIO))
        );
        // Writes still go; a durable one writes, then refuses its sync.
        f.write_all_at(&[Bytes::from_static(b"more")], 4, true)
            .unwrap_err();
        let mut buf = [0u8; 4];
        f.read_exact_at(&mut buf, 4).unwrap();
        assert_eq!(&buf, b"more");
        assert_eq!(sim.syncs_completed(), syncs, "no sync reached the disk");
        // Another open of the file is a new handle: it syncs.
        let g = sim
            .open(Path::new("/d/0.log"), OpenMode::ReadWrite)
            .unwrap();
        g.sync_data().unwrap();
    }

    #[test]
    fn a_failed_durable_write_fails_every_later_sync_of_the_file() {
        let sim = SimStorage::new();
        let f = file_whose_next_sync_fails(&sim);
        let e = f
            .write_all_at(&[Bytes::from_static(b"more")], 4, true)
            .unwrap_err();
        assert_eq!(e.op, IoOp::SyncData);
        assert_eq!(f.sync_data().unwrap_err().op, IoOp::SyncData);
    }

    #[test]
    fn a_failed_write_is_not_a_failed_sync() {
        let sim = SimStorage::new();
        sim.create_dir_all(Path::new("/d")).unwrap();
        let f = sim
            .open(Path::new("/d/0.log"), OpenMode::CreateNew)
            .unwrap();
        sim.inject(Fault::new(IoOp::WriteAt, FaultKind::Eio).on_path("0.log"));
        let e = f
            .write_all_at(&[Bytes::from_static(b"x")], 0, true)
            .unwrap_err();
        assert_eq!(e.op, IoOp::WriteAt);
        f.sync_data().unwrap();
    }

    #[test]
    fn is_no_space_recognises_enospc() {
        let e = IoError::new(
            IoOp::WriteAt,
            "/f",
            io::Error::from_raw_os_error(libc::ENOSPC),
        );
        assert!(e.is_no_space());
        assert_eq!(e.kind(), io::ErrorKind::StorageFull);
    }

    #[test]
    fn open_modes_report_open_or_create() {
        assert_eq!(OpenMode::Read.op(), IoOp::Open);
        assert_eq!(OpenMode::ReadWrite.op(), IoOp::Open);
        assert_eq!(OpenMode::CreateOrOpen.op(), IoOp::Create);
        assert_eq!(OpenMode::CreateNew.op(), IoOp::Create);
        assert!(!OpenMode::Read.is_writable());
        assert!(OpenMode::CreateNew.is_writable());
    }

    #[test]
    fn forcing_pwrite_selects_pwrite() {
        assert_eq!(select_storage(Some("pwrite")).name(), "pwrite");
    }

    #[test]
    fn forcing_io_uring_selects_io_uring_when_the_kernel_allows_it() {
        let expected = if UringStorage::new().is_ok() {
            "io_uring"
        } else {
            "pwrite"
        };
        assert_eq!(select_storage(Some("io_uring")).name(), expected);
    }

    #[test]
    fn an_unknown_forced_value_falls_back_to_automatic_choice() {
        assert_eq!(
            select_storage(Some("bogus")).name(),
            select_storage(None).name()
        );
    }

    #[test]
    fn the_buffered_default_is_pwrite_as_measured() {
        assert_eq!(select_storage(None).name(), "pwrite");
    }

    #[test]
    fn storage_by_name_returns_the_named_backend() {
        assert_eq!(storage_by_name("pwrite").map(|s| s.name()), Some("pwrite"));
        assert_eq!(
            storage_by_name("simulated").map(|s| s.name()),
            Some("simulated")
        );
        if UringStorage::new().is_ok() {
            assert_eq!(
                storage_by_name("io_uring").map(|s| s.name()),
                Some("io_uring")
            );
        }
        assert!(storage_by_name("mmap").is_none());
    }

    #[test]
    fn positions_beyond_off_t_are_rejected() {
        assert!(to_off_t(u64::MAX).is_err());
        assert_eq!(to_off_t(7).ok(), Some(7));
    }
}
