//! The direct-I/O backend: segment `.log` files appended with `O_DIRECT` through io_uring, the
//! rest delegated to a buffered backend.
//!
//! # Why
//!
//! On the reference machine (ext4 on a virtio disk) buffered writes through io_uring are no
//! faster than `pwrite` (ext4 hands them to kernel workers), while `O_DIRECT` writes at queue
//! depth through io_uring are several times faster and a durable write costs one device write
//! instead of a page-cache copy, writeback and a journal commit. `mirrorlog-bench direct-append`
//! measures this path beside a raw `O_DIRECT` sequential write and a raw `O_DSYNC` 16 KiB write.
//!
//! # What goes direct
//!
//! [`DirectStorage::open`] opens a **writable `.log` file** as a [`DirectFile`]; every other file
//! (read-only `.log`s of sealed segments, snapshots, checkpoints, …) and every directory operation
//! goes to the wrapped buffered backend, so everything but the active segments' appends stays
//! exactly as in buffered mode.
//!
//! # How a `.log` is appended
//!
//! - The file is **preallocated** with `fallocate` in steps of [`DirectConfig::preallocate_bytes`]
//!   (the first step when an empty file is opened, like Kafka's `file.preallocate`, the next ones
//!   as appends reach the end; each followed by one `fdatasync`, so the new length and extents
//!   are durable before data lands in them). The *logical* length — what [`StorageFile::len`], readers and recovery see — is the
//!   end of the appended bytes; past it the file reads as zeros.
//! - An append at the logical end is **copied once** into the current 4 KiB-aligned chunk buffer
//!   (capacity [`DirectConfig::chunk_bytes`]); nothing reaches the disk from the caller's thread.
//!   One io_uring per storage, owned by one thread that does every submission (see `Ring` for
//!   why), writes chunks with `O_DIRECT`: a full chunk as soon as it is full, the current
//!   partial chunk as soon as nothing in flight overlaps it. A partial
//!   chunk is written rounded up to 4 KiB with zero padding, and its **partial last block is
//!   rewritten** by the next write (which starts at that block, after the previous write
//!   completed: two writes to one block are never in flight together). Up to
//!   [`DirectConfig::max_in_flight_per_file`] non-overlapping writes of one file run at once, and
//!   one submission carries the writes and syncs of every file that has work.
//! - **Durability** ([`DirectDurability`]): `dsync` writes carry `RWF_DSYNC` (durable on
//!   completion, FUA or a journal commit as the file system needs); `fdatasync` writes are plain
//!   and a sync is an `IORING_OP_FSYNC` with `IORING_FSYNC_DATASYNC` issued once the bytes it
//!   covers are written. [`StorageFile::sync_data`] waits until everything appended before the
//!   call is durable. The `fdatasync`s made from the caller's thread (preallocation, trimming,
//!   in-place rewrites) never overlap the ring's: one waits for the ring's in flight, and the
//!   ring starts none while it runs (it starts a sync only under the file's lock, which the
//!   caller holds throughout), so the two cannot split one report of a failed write-back (`io`
//!   module docs: "Durability"). The ring's data writes take no lock of this.
//! - A **tail cache** keeps the caller's buffers (no copy: `Bytes` are reference counted) of the
//!   most recent appends, at least [`DirectConfig::tail_cache_bytes`] and always every byte not yet
//!   written: reads there never touch the disk; older bytes are read with `pread` through a second,
//!   buffered descriptor.
//! - **Sealing and closing** ([`StorageFile::finish_appends`], and drop) write out what is
//!   pending, then cut the preallocated zeros (`ftruncate` to the logical length + `fdatasync`),
//!   so a closed file is exactly Kafka's `.log`. After a crash the file may end in preallocated
//!   zeros: recovery reads a zero batch length there and truncates it away like a torn tail (see
//!   `segment/FORMAT.md`).
//!
//! # Errors
//!
//! A failed write or sync is **sticky**: the file's durable content is then unknown, so every later
//! append and sync of that file fails with the first error (the ring's syncs and the `fdatasync`s
//! made from the caller's thread alike: preallocation, trimming, in-place rewrites) (the segment stops using it and the
//! log recovers, as after a failed `fdatasync` in buffered mode). A file system without `O_DIRECT`
//! support fails at open with `EINVAL` and says so.

use std::alloc::{Layout, alloc_zeroed, dealloc};
use std::collections::VecDeque;
use std::fmt;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;

use bytes::Bytes;
use io_uring::{IoUring, opcode, types};

use super::{IoError, IoOp, IoResult, OpenMode, Storage, StorageFile};

/// The alignment of every direct write: offsets, lengths and buffer addresses. 4 KiB covers
/// devices with 512-byte and 4 KiB logical blocks.
pub const DIRECT_BLOCK: u64 = 4096;
const BLOCK: usize = DIRECT_BLOCK as usize;

/// How a direct append becomes durable. Chosen by `mirrorlog-bench direct-append`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DirectDurability {
    /// Every write carries `RWF_DSYNC`: durable when it completes; a sync only waits.
    Dsync,
    /// Plain writes; a sync is an `fdatasync` submitted through the ring once the bytes it
    /// covers are written.
    Fdatasync,
}

impl DirectDurability {
    /// `"dsync"` or `"fdatasync"`.
    pub fn as_str(self) -> &'static str {
        match self {
            DirectDurability::Dsync => "dsync",
            DirectDurability::Fdatasync => "fdatasync",
        }
    }

    /// Parses [`as_str`](Self::as_str)'s names.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "dsync" => Some(DirectDurability::Dsync),
            "fdatasync" => Some(DirectDurability::Fdatasync),
            _ => None,
        }
    }
}

/// Settings of the direct-I/O backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DirectConfig {
    /// How appends become durable. Default [`DirectDurability::Dsync`] (measured: see README).
    pub durability: DirectDurability,
    /// Preallocation step of a `.log` file. Default 64 MiB; range 4 KiB ..= 1 GiB, a multiple of
    /// 4 KiB.
    pub preallocate_bytes: u64,
    /// Capacity of one chunk buffer, the largest single write. Each open `.log` file holds one
    /// (its current chunk), plus one per write in flight. Default 256 KiB; range
    /// 4 KiB ..= 64 MiB, a multiple of 4 KiB.
    pub chunk_bytes: usize,
    /// Writes of one file in flight at once (non-overlapping). Default 8; range 1 ..= 64.
    pub max_in_flight_per_file: usize,
    /// Bytes of recent appends kept in memory per file for readers, beyond the ones not yet
    /// written (always kept). Default 1 MiB; range 0 ..= 1 GiB.
    pub tail_cache_bytes: usize,
    /// Submission-queue entries of the storage's ring. Default 256; a power of two in 8 ..= 4096.
    pub ring_entries: u32,
}

impl Default for DirectConfig {
    fn default() -> Self {
        DirectConfig {
            durability: DirectDurability::Dsync,
            preallocate_bytes: 64 << 20,
            chunk_bytes: 256 << 10,
            max_in_flight_per_file: 8,
            tail_cache_bytes: 1 << 20,
            ring_entries: 256,
        }
    }
}

impl DirectConfig {
    /// Rejects out-of-range values with a message naming the field, its range and the value.
    pub fn validate(&self) -> Result<(), String> {
        if !(DIRECT_BLOCK..=1 << 30).contains(&self.preallocate_bytes)
            || !self.preallocate_bytes.is_multiple_of(DIRECT_BLOCK)
        {
            return Err(format!(
                "preallocate_bytes must be a multiple of 4096 in 4096..=1073741824, got {}",
                self.preallocate_bytes
            ));
        }
        if !(BLOCK..=64 << 20).contains(&self.chunk_bytes)
            || !self.chunk_bytes.is_multiple_of(BLOCK)
        {
            return Err(format!(
                "chunk_bytes must be a multiple of 4096 in 4096..=67108864, got {}",
                self.chunk_bytes
            ));
        }
        if !(1..=64).contains(&self.max_in_flight_per_file) {
            return Err(format!(
                "max_in_flight_per_file must be in 1..=64, got {}",
                self.max_in_flight_per_file
            ));
        }
        if self.tail_cache_bytes > 1 << 30 {
            return Err(format!(
                "tail_cache_bytes must be in 0..=1073741824, got {}",
                self.tail_cache_bytes
            ));
        }
        if !(8..=4096).contains(&self.ring_entries) || !self.ring_entries.is_power_of_two() {
            return Err(format!(
                "ring_entries must be a power of two in 8..=4096, got {}",
                self.ring_entries
            ));
        }
        Ok(())
    }
}

/// Direct I/O for writable `.log` files over a buffered backend for everything else.
#[derive(Debug, Clone)]
pub struct DirectStorage {
    inner: Arc<dyn Storage>,
    config: DirectConfig,
    ring: Arc<Ring>,
}

impl DirectStorage {
    /// The backend's [`Storage::name`].
    pub const NAME: &'static str = "direct";

    /// Wraps `inner` (which must be a real file system backend: `pwrite` or `io_uring`).
    ///
    /// # Errors
    /// `InvalidInput` for a bad config or a simulated `inner`; the kernel's error when io_uring
    /// is not allowed.
    pub fn new(inner: Arc<dyn Storage>, config: DirectConfig) -> io::Result<Self> {
        config
            .validate()
            .map_err(|m| io::Error::new(io::ErrorKind::InvalidInput, m))?;
        if inner.name() == super::SimStorage::NAME {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "direct I/O needs a real file system, not the simulated backend",
            ));
        }
        let ring = Ring::new(config)?;
        Ok(DirectStorage {
            inner,
            config,
            ring: Arc::new(ring),
        })
    }

    /// The settings.
    pub fn config(&self) -> DirectConfig {
        self.config
    }
}

impl Storage for DirectStorage {
    fn name(&self) -> &'static str {
        Self::NAME
    }

    fn open(&self, path: &Path, mode: OpenMode) -> IoResult<Arc<dyn StorageFile>> {
        let is_log = path.extension().is_some_and(|e| e == "log");
        if !mode.is_writable() || !is_log {
            return self.inner.open(path, mode);
        }
        Ok(Arc::new(DirectFile::open(
            path,
            mode,
            self.config,
            Arc::clone(&self.ring),
        )?))
    }

    crate::delegate_directory_ops!();
}

/// A heap buffer aligned to [`DIRECT_BLOCK`], zero-initialised, of fixed capacity.
struct AlignedBuf {
    ptr: *mut u8,
    cap: usize,
}

// SAFETY: the buffer is uniquely owned heap memory, like a `Vec<u8>`.
unsafe impl Send for AlignedBuf {}

impl AlignedBuf {
    fn zeroed(cap: usize) -> AlignedBuf {
        assert!(
            cap > 0 && cap.is_multiple_of(BLOCK),
            "aligned buffer of {cap} bytes"
        );
        let layout = Layout::from_size_align(cap, BLOCK).expect("layout");
        // SAFETY: the layout has a non-zero size.
        let ptr = unsafe { alloc_zeroed(layout) };
        if ptr.is_null() {
            std::alloc::handle_alloc_error(layout);
        }
        AlignedBuf { ptr, cap }
    }

    fn as_slice(&self) -> &[u8] {
        // SAFETY: `ptr` points to `cap` initialised (zeroed at allocation) bytes we own.
        unsafe { std::slice::from_raw_parts(self.ptr, self.cap) }
    }

    fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as in `as_slice`, and `&mut self` makes the access exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.cap) }
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        let layout = Layout::from_size_align(self.cap, BLOCK).expect("layout");
        // SAFETY: allocated in `zeroed` with this very layout.
        unsafe { dealloc(self.ptr, layout) }
    }
}

/// Chunk buffers returned by completed writes, reused by the next chunks of any file (a fresh
/// 1 MiB allocation is an `mmap` + `munmap` pair per write otherwise). Holds at most
/// [`POOL_BUFFERS`] buffers.
#[derive(Default)]
struct BufPool {
    free: Mutex<Vec<AlignedBuf>>,
}

/// The most idle chunk buffers a storage keeps.
const POOL_BUFFERS: usize = 64;

impl BufPool {
    /// A buffer of `cap` bytes; its content is arbitrary (the caller zeroes the padding it
    /// writes).
    fn get(&self, cap: usize) -> AlignedBuf {
        let reused = self.free.lock().unwrap_or_else(|p| p.into_inner()).pop();
        match reused {
            Some(b) if b.cap == cap => b,
            _ => AlignedBuf::zeroed(cap),
        }
    }

    fn put(&self, buf: AlignedBuf) {
        let mut free = self.free.lock().unwrap_or_else(|p| p.into_inner());
        if free.len() < POOL_BUFFERS {
            free.push(buf);
        }
    }
}

fn align_down(x: u64) -> u64 {
    x & !(DIRECT_BLOCK - 1)
}

fn align_up(x: u64) -> u64 {
    x.div_ceil(DIRECT_BLOCK) * DIRECT_BLOCK
}

/// A chunk of the file being filled or waiting to be written: file range `[pos, pos + len)`.
struct Chunk {
    pos: u64,
    len: usize,
    buf: AlignedBuf,
}

/// One write handed to the ring (or queued for it).
#[derive(Debug, Clone, Copy)]
struct InFlight {
    start: u64,
    /// The logical end the write covers (its padded end is `align_up(end)`).
    end: u64,
    done: bool,
}

struct FileState {
    /// End of the appended bytes: the file's length as readers see it.
    logical_len: u64,
    /// The file's physical length (preallocated up to here).
    allocated: u64,
    /// Appended bytes not yet in a write: `[current.pos, logical_len)`.
    current: Chunk,
    /// Full chunks waiting for the ring.
    ready: VecDeque<Chunk>,
    /// Writes given to the ring, in file order.
    in_flight: VecDeque<InFlight>,
    /// Every byte below this is in a write given to the ring (or written).
    submitted_len: u64,
    /// Every byte below this is written (all writes up to it completed).
    written_len: u64,
    /// Every byte below this is durable.
    durable_len: u64,
    /// The largest length a caller waits to see durable.
    sync_wanted: u64,
    /// An `fdatasync` is in flight, covering up to this length.
    sync_in_flight: Option<u64>,
    /// Metadata (length) changed since the last sync: `sync_data` must really sync.
    metadata_dirty: bool,
    /// Cuts and in-place rewrites so far: each lowers `durable_len` and `sync_wanted`, so a
    /// `sync_data` begun before one waits for a target that may never come and must start over.
    rewrites: u64,
    /// Recent appends, contiguous, ending at `logical_len`.
    cache: VecDeque<(u64, Bytes)>,
    cache_bytes: usize,
    /// The first failure (a write's or a sync's, the ring's or a direct `fdatasync`'s), copied
    /// to every later operation.
    error: Option<IoError>,
    /// Times an `fdatasync` from a caller's thread waited for the ring's to complete
    /// ([`FileInner::sync_direct`]); the tests watch it.
    ring_sync_waits: u64,
}

impl FileState {
    fn cache_start(&self) -> u64 {
        self.cache.front().map_or(self.logical_len, |(p, _)| *p)
    }

    /// Drops the oldest cached appends beyond the budget that are safely on disk (below the
    /// first block any unfinished write may still rewrite).
    fn evict(&mut self, budget: usize) {
        let safe = align_down(self.written_len);
        while self.cache_bytes > budget {
            match self.cache.front() {
                Some((p, b)) if p + b.len() as u64 <= safe => {
                    self.cache_bytes -= b.len();
                    self.cache.pop_front();
                }
                _ => break,
            }
        }
    }
}

struct FileInner {
    path: PathBuf,
    /// `O_DIRECT` descriptor: every write.
    direct: File,
    /// Buffered descriptor: reads below the tail cache.
    buffered: File,
    config: DirectConfig,
    pool: Arc<BufPool>,
    state: Mutex<FileState>,
    /// Notified by the ring thread whenever the file's state moved.
    changed: Condvar,
}

impl FileInner {
    fn lock(&self) -> MutexGuard<'_, FileState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn fail(&self, st: &mut FileState, op: IoOp, e: io::Error) {
        if st.error.is_none() {
            tracing::error!(path = %self.path.display(), %op, error = %e, "direct I/O failed");
            st.error = Some(IoError::new(op, &self.path, e));
        }
        self.changed.notify_all();
    }

    /// Waits, the state unlocked meanwhile, until no `fdatasync` of the ring is in flight for
    /// the file (or the file failed); returns the state locked again. While the state stays
    /// locked the ring starts none (it pushes a sync only under the lock), so a caller's
    /// `fdatasync` made then runs alone: two overlapping syncs of the file could split the
    /// kernel's one report of a failed write-back (`io` module docs: "Durability"). The ring's
    /// data writes are not waited for.
    fn without_ring_sync<'a>(
        &'a self,
        mut st: MutexGuard<'a, FileState>,
    ) -> MutexGuard<'a, FileState> {
        if st.sync_in_flight.is_some() && st.error.is_none() {
            st.ring_sync_waits += 1;
        }
        while st.sync_in_flight.is_some() && st.error.is_none() {
            st = self.changed.wait(st).unwrap_or_else(|p| p.into_inner());
        }
        st
    }

    /// An `fdatasync` of the direct descriptor from the caller's thread (a preallocation's, a
    /// cut's, a rewrite's), once no `fdatasync` of the ring is in flight for the file
    /// ([`without_ring_sync`](Self::without_ring_sync): the state may be unlocked for a while
    /// before it runs). A failure is sticky like the ring's: after it, the kernel may report
    /// `Ok` to a later sync of pages it dropped (`io` module docs: "Durability").
    fn sync_direct<'a>(
        &'a self,
        st: MutexGuard<'a, FileState>,
    ) -> IoResult<MutexGuard<'a, FileState>> {
        let mut st = self.without_ring_sync(st);
        check(&st)?;
        assert!(
            st.sync_in_flight.is_none(),
            "a caller's fdatasync beside the ring's"
        );
        if let Err(e) = self.direct.sync_data() {
            self.fail(&mut st, IoOp::SyncData, e);
        }
        check(&st)?;
        Ok(st)
    }
}

/// A `.log` file written with `O_DIRECT` through the storage's ring. See the module docs.
pub struct DirectFile {
    inner: Arc<FileInner>,
    ring: Arc<Ring>,
}

impl fmt::Debug for DirectFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DirectFile")
            .field("path", &self.inner.path)
            .finish_non_exhaustive()
    }
}

impl DirectFile {
    fn open(
        path: &Path,
        mode: OpenMode,
        config: DirectConfig,
        ring: Arc<Ring>,
    ) -> IoResult<DirectFile> {
        let mut opts = OpenOptions::new();
        opts.read(true).write(true).custom_flags(libc::O_DIRECT);
        match mode {
            OpenMode::CreateNew => {
                opts.create_new(true);
            }
            OpenMode::CreateOrOpen => {
                opts.create(true);
            }
            OpenMode::ReadWrite | OpenMode::Read => {}
        }
        let direct = opts.open(path).map_err(|e| {
            let e = if e.raw_os_error() == Some(libc::EINVAL) {
                io::Error::new(
                    e.kind(),
                    format!("{e} (the file system does not support O_DIRECT)"),
                )
            } else {
                e
            };
            IoError::new(mode.op(), path, e)
        })?;
        let buffered = File::open(path).map_err(|e| IoError::new(IoOp::Open, path, e))?;
        let len = direct
            .metadata()
            .map_err(|e| IoError::new(IoOp::Len, path, e))?
            .len();
        let current = load_chunk(&buffered, path, len, config.chunk_bytes)?;
        let mut allocated = len;
        if len == 0 {
            // A new segment: preallocate now (like Kafka's `file.preallocate`), so the first
            // appends do not pay for it.
            // Best effort on a nearly full disk: without it the first append allocates what it
            // needs (or fails with ENOSPC, which leaves the segment usable).
            let got = if roomy(&direct, config.preallocate_bytes) {
                fallocate(&direct, 0, config.preallocate_bytes)
            } else {
                Err(io::Error::from_raw_os_error(libc::ENOSPC))
            };
            match got {
                Ok(()) => {
                    direct
                        .sync_data()
                        .map_err(|e| IoError::new(IoOp::SyncData, path, e))?;
                    allocated = config.preallocate_bytes;
                }
                Err(e) if e.raw_os_error() == Some(libc::ENOSPC) => {
                    tracing::warn!(path = %path.display(), "no room to preallocate a new segment; its appends allocate as they go");
                }
                Err(e) => return Err(IoError::new(IoOp::SetLen, path, e)),
            }
        }
        let state = FileState {
            logical_len: len,
            allocated,
            current,
            ready: VecDeque::new(),
            in_flight: VecDeque::new(),
            submitted_len: len,
            written_len: len,
            durable_len: len,
            sync_wanted: 0,
            sync_in_flight: None,
            metadata_dirty: false,
            rewrites: 0,
            cache: VecDeque::new(),
            cache_bytes: 0,
            error: None,
            ring_sync_waits: 0,
        };
        Ok(DirectFile {
            inner: Arc::new(FileInner {
                path: path.to_path_buf(),
                direct,
                buffered,
                config,
                pool: Arc::clone(&ring.pool),
                state: Mutex::new(state),
                changed: Condvar::new(),
            }),
            ring,
        })
    }

    fn check(&self, st: &FileState) -> IoResult<()> {
        check(st)
    }

    /// Appends `buf` at the logical end (copied into chunks; written through the ring). A
    /// preallocation first waits for an `fdatasync` of the ring in flight (the state unlocked
    /// meanwhile), then runs whole under the lock.
    fn append<'a>(
        &'a self,
        mut st: MutexGuard<'a, FileState>,
        buf: Bytes,
    ) -> IoResult<MutexGuard<'a, FileState>> {
        let inner = &*self.inner;
        if st.logical_len + buf.len() as u64 > st.allocated {
            st = inner.without_ring_sync(st);
            self.check(&st)?;
        }
        let end = st.logical_len + buf.len() as u64;
        if end > st.allocated {
            let step = inner.config.preallocate_bytes;
            let mut target = end.div_ceil(step) * step;
            if !roomy(&inner.direct, target - st.allocated) {
                // A nearly full disk: just the blocks this append needs, so the preallocation
                // does not take (even for a moment) the room other files need.
                target = align_up(end);
            }
            let got = fallocate(&inner.direct, st.allocated, target - st.allocated);
            // No room is what a buffered write would have met: reported as the append's write
            // failing with ENOSPC (nothing was copied or written, so the file is unchanged and
            // the segment stays usable once space returns), not as a broken file.
            got.map_err(|e| IoError::new(IoOp::WriteAt, &inner.path, e))?;
            st = inner.sync_direct(st)?;
            st.allocated = target;
        }
        let chunk_bytes = inner.config.chunk_bytes;
        let mut rest: &[u8] = &buf;
        while !rest.is_empty() {
            if st.current.len == chunk_bytes {
                let pos = st.current.pos + chunk_bytes as u64;
                let full = std::mem::replace(
                    &mut st.current,
                    Chunk {
                        pos,
                        len: 0,
                        buf: inner.pool.get(chunk_bytes),
                    },
                );
                st.ready.push_back(full);
            }
            let c = &mut st.current;
            let n = rest.len().min(chunk_bytes - c.len);
            c.buf.as_mut_slice()[c.len..c.len + n].copy_from_slice(&rest[..n]);
            c.len += n;
            rest = &rest[n..];
        }
        let pos = st.logical_len;
        st.logical_len = end;
        st.cache_bytes += buf.len();
        st.cache.push_back((pos, buf));
        st.evict(inner.config.tail_cache_bytes);
        Ok(st)
    }

    /// Waits until every append is written and no sync is in flight (nothing queued or in
    /// flight); returns the state locked. A sync still in flight would, on completing, raise
    /// `durable_len` to its target, which a truncation under this lock may just have cut: the
    /// appends after it would then count as durable without a sync.
    fn drain(&self) -> IoResult<MutexGuard<'_, FileState>> {
        let st = self.ring.wait(&self.inner, |st| {
            st.written_len == st.logical_len
                && st.in_flight.is_empty()
                && st.sync_in_flight.is_none()
        });
        self.check(&st)?;
        Ok(st)
    }

    /// After a drain: the logical length becomes `len` (≤ the current one), the file is cut
    /// there, and the current chunk restarts at its block.
    fn cut(&self, st: &mut FileState, len: u64) -> IoResult<()> {
        let inner = &*self.inner;
        inner
            .direct
            .set_len(len)
            .map_err(|e| IoError::new(IoOp::SetLen, &inner.path, e))?;
        st.current = load_chunk(&inner.buffered, &inner.path, len, inner.config.chunk_bytes)?;
        st.logical_len = len;
        st.allocated = len;
        st.submitted_len = len;
        st.written_len = len;
        st.durable_len = st.durable_len.min(len);
        st.sync_wanted = st.sync_wanted.min(len);
        st.metadata_dirty = true;
        st.rewrites += 1;
        st.cache.clear();
        st.cache_bytes = 0;
        Ok(())
    }

    /// Syncs the file when its metadata changed since the last sync
    /// ([`FileInner::sync_direct`]: the state may be unlocked for a while first).
    fn sync_metadata<'a>(
        &'a self,
        mut st: MutexGuard<'a, FileState>,
    ) -> IoResult<MutexGuard<'a, FileState>> {
        if st.metadata_dirty {
            st = self.inner.sync_direct(st)?;
            st.metadata_dirty = false;
        }
        Ok(st)
    }
}

/// `Err` (a copy of the file's first failure) once an operation of the file failed.
fn check(st: &FileState) -> IoResult<()> {
    match &st.error {
        Some(e) => Err(e.copy()),
        None => Ok(()),
    }
}

/// A chunk holding the bytes of the partial last block below `len` (read back from the file).
fn load_chunk(file: &File, path: &Path, len: u64, chunk_bytes: usize) -> IoResult<Chunk> {
    let pos = align_down(len);
    let n = (len - pos) as usize;
    let mut buf = AlignedBuf::zeroed(chunk_bytes);
    file.read_exact_at(&mut buf.as_mut_slice()[..n], pos)
        .map_err(|e| IoError::new(IoOp::ReadAt, path, e))?;
    Ok(Chunk { pos, len: n, buf })
}

/// Whether the file system holding `file` has at least twice `bytes` free (a failed `fstatvfs`
/// answers yes: `fallocate` then finds out). Preallocating a step takes it only then, so that
/// it never takes the last of the room other files need, nor (as on tmpfs, which undoes a
/// failed `fallocate` only at its end) fills the disk for a moment while failing.
fn roomy(file: &File, bytes: u64) -> bool {
    // SAFETY: `statvfs` is plain old data; fstatvfs fills it for an open descriptor.
    let mut vfs: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: the descriptor is open (borrowed from `file`) and `vfs` is a valid out-pointer.
    if unsafe { libc::fstatvfs(file.as_raw_fd(), &mut vfs) } != 0 {
        return true;
    }
    let free = (vfs.f_bavail as u64).saturating_mul(vfs.f_frsize as u64);
    free / 2 >= bytes
}

fn fallocate(file: &File, offset: u64, len: u64) -> io::Result<()> {
    let (Ok(off), Ok(n)) = (libc::off_t::try_from(offset), libc::off_t::try_from(len)) else {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    };
    // SAFETY: plain system call on a descriptor we own.
    let rc = unsafe { libc::fallocate(file.as_raw_fd(), 0, off, n) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

impl StorageFile for DirectFile {
    fn path(&self) -> &Path {
        &self.inner.path
    }

    fn write_at(&self, buf: Bytes, pos: u64) -> IoResult<()> {
        self.write_all_at(&[buf], pos, false)
    }

    fn write_all_at(&self, bufs: &[Bytes], pos: u64, durable: bool) -> IoResult<()> {
        let mut st = self.inner.lock();
        self.check(&st)?;
        if pos != st.logical_len {
            // Not an append (segments only append): write everything out, then rewrite the
            // blocks concerned in place, synchronously.
            drop(st);
            let mut st = self.drain()?;
            let data: Vec<u8> = bufs.iter().flat_map(|b| b.iter().copied()).collect();
            overwrite(&self.inner, &mut st, pos, &data)?;
        } else {
            for b in bufs {
                if !b.is_empty() {
                    st = self.append(st, b.clone())?;
                }
            }
            if durable {
                // Said before the write starts, so an fdatasync can be linked behind it.
                st.sync_wanted = st.sync_wanted.max(st.logical_len);
            }
            let backlog = st.ready.len() >= self.inner.config.max_in_flight_per_file;
            drop(st);
            if !durable {
                // A durable append starts its write from the wait below, in the same
                // submission that waits.
                self.ring.kick(&self.inner);
            }
            if backlog {
                // Appends outrun the disk: wait until the queue of full chunks is short again,
                // so memory stays bounded.
                let max = self.inner.config.max_in_flight_per_file;
                let st = self.ring.wait(&self.inner, |st| st.ready.len() < max);
                self.check(&st)?;
            }
        }
        if durable { self.sync_data() } else { Ok(()) }
    }

    fn read_at(&self, buf: &mut [u8], pos: u64) -> IoResult<usize> {
        let st = self.inner.lock();
        if pos >= st.logical_len || buf.is_empty() {
            return Ok(0);
        }
        let n = buf.len().min((st.logical_len - pos) as usize);
        let cache_start = st.cache_start();
        if pos >= cache_start {
            copy_from_cache(&st.cache, &mut buf[..n], pos);
            return Ok(n);
        }
        // Below the cache: on disk and never rewritten (see `FileState::evict`).
        let disk = n.min((cache_start - pos) as usize);
        if disk < n {
            copy_from_cache(&st.cache, &mut buf[disk..n], cache_start);
        }
        drop(st);
        let mut done = 0;
        while done < disk {
            match self
                .inner
                .buffered
                .read_at(&mut buf[done..disk], pos + done as u64)
            {
                Ok(0) => {
                    return Err(IoError::new(
                        IoOp::ReadAt,
                        &self.inner.path,
                        io::Error::new(io::ErrorKind::UnexpectedEof, "file shorter than written"),
                    ));
                }
                Ok(k) => done += k,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(IoError::new(IoOp::ReadAt, &self.inner.path, e)),
            }
        }
        Ok(n)
    }

    fn sync_data(&self) -> IoResult<()> {
        let mut st = self.inner.lock();
        let target = st.logical_len;
        let rewrites = st.rewrites;
        st.sync_wanted = st.sync_wanted.max(target);
        drop(st);
        let dsync = self.inner.config.durability == DirectDurability::Dsync;
        let mut st = self.ring.wait(&self.inner, |st| {
            st.rewrites != rewrites
                || st.durable_len >= target
                || (dsync && st.written_len >= target && st.in_flight.is_empty())
        });
        self.check(&st)?;
        if st.rewrites != rewrites {
            // Cut or rewritten in place since the call: the target may be gone and the bytes
            // below it changed. Sync what the file holds now, which includes every byte written
            // before the call that is still there.
            drop(st);
            return self.sync_data();
        }
        if st.durable_len < target {
            // Written without `RWF_DSYNC` (an in-place rewrite): sync for real.
            st.metadata_dirty = true;
            st = self.sync_metadata(st)?;
            if st.rewrites != rewrites {
                // Cut or rewritten while the sync waited for the ring's: as above.
                drop(st);
                return self.sync_data();
            }
            st.durable_len = st.durable_len.max(target);
        }
        self.sync_metadata(st).map(drop)
    }

    fn set_len(&self, len: u64) -> IoResult<()> {
        let mut st = self.drain()?;
        if len <= st.logical_len {
            self.cut(&mut st, len)
        } else {
            let zeros = Bytes::from(vec![0u8; (len - st.logical_len) as usize]);
            drop(self.append(st, zeros)?);
            self.ring.kick(&self.inner);
            Ok(())
        }
    }

    fn len(&self) -> IoResult<u64> {
        Ok(self.inner.lock().logical_len)
    }

    fn raw_fd(&self) -> Option<RawFd> {
        // Appended bytes may still be only in memory: a `sendfile` of the descriptor would miss
        // them.
        None
    }

    fn data_range(&self, pos: u64) -> IoResult<Option<(u64, u64)>> {
        // Bytes not yet written are data too (they are in memory, not in the file).
        let st = self.drain()?;
        let len = st.logical_len;
        drop(st);
        if pos >= len {
            return Ok(None);
        }
        match super::data_range_of(self.inner.buffered.as_raw_fd(), &self.inner.path, pos)? {
            Some((start, end)) if start < len => Ok(Some((start, end.min(len)))),
            _ => Ok(None),
        }
    }

    fn shares_syncs(&self) -> bool {
        // Waiters wait for their own bytes; the ring's writes (`dsync`) or one fdatasync per
        // file at a time (`fdatasync`) serve everyone waiting.
        true
    }

    fn finish_appends(&self) -> IoResult<()> {
        let mut st = self.drain()?;
        if st.allocated > st.logical_len {
            let len = st.logical_len;
            self.inner
                .direct
                .set_len(len)
                .map_err(|e| IoError::new(IoOp::SetLen, &self.inner.path, e))?;
            st.allocated = len;
            st.metadata_dirty = true;
        }
        self.sync_metadata(st).map(drop)
    }
}

impl Drop for DirectFile {
    fn drop(&mut self) {
        if let Err(e) = self.finish_appends() {
            tracing::warn!(error = %e, "closing a direct-I/O file left it untrimmed");
        }
    }
}

fn copy_from_cache(cache: &VecDeque<(u64, Bytes)>, out: &mut [u8], pos: u64) {
    let mut i = cache.partition_point(|(p, b)| p + b.len() as u64 <= pos);
    let mut done = 0;
    while done < out.len() {
        let (p, b) = &cache[i];
        let from = (pos + done as u64 - p) as usize;
        let n = (b.len() - from).min(out.len() - done);
        out[done..done + n].copy_from_slice(&b[from..from + n]);
        done += n;
        i += 1;
    }
}

/// Rewrites `[pos, pos + data.len())` in place with synchronous direct writes of whole blocks
/// (read, patch, write), extending the logical length if it ends beyond it. Only after a drain.
fn overwrite(inner: &FileInner, st: &mut FileState, pos: u64, data: &[u8]) -> IoResult<()> {
    if pos > st.logical_len {
        return Err(IoError::new(
            IoOp::WriteAt,
            &inner.path,
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "direct file: write at {pos} beyond the end {} would leave a hole",
                    st.logical_len
                ),
            ),
        ));
    }
    let end = pos + data.len() as u64;
    let (start, stop) = (align_down(pos), align_up(end));
    let mut buf = AlignedBuf::zeroed((stop - start) as usize);
    let old_end = st.logical_len.min(stop);
    if old_end > start {
        inner
            .buffered
            .read_exact_at(&mut buf.as_mut_slice()[..(old_end - start) as usize], start)
            .map_err(|e| IoError::new(IoOp::ReadAt, &inner.path, e))?;
    }
    buf.as_mut_slice()[(pos - start) as usize..(end - start) as usize].copy_from_slice(data);
    inner
        .direct
        .write_all_at(buf.as_slice(), start)
        .map_err(|e| IoError::new(IoOp::WriteAt, &inner.path, e))?;
    let new_len = st.logical_len.max(end);
    st.allocated = st.allocated.max(stop);
    st.metadata_dirty = true;
    // Start over from the new end: the cache may hold replaced bytes.
    st.logical_len = new_len;
    st.submitted_len = new_len;
    st.written_len = new_len;
    st.durable_len = st.durable_len.min(pos);
    st.rewrites += 1;
    st.cache.clear();
    st.cache_bytes = 0;
    st.current = load_chunk(
        &inner.buffered,
        &inner.path,
        new_len,
        inner.config.chunk_bytes,
    )?;
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// The ring: shared by every direct file of a storage, driven by the threads that use it.

/// One io_uring shared by all direct files of a [`DirectStorage`], owned by one thread
/// (`mirrorlog-direct-io`) that does every submission: a thread that appends or must wait
/// queues its file and wakes the ring thread through an eventfd the ring polls; the ring thread
/// starts whatever every queued file can start, submits it all in one `io_uring_enter`, and on
/// each completion updates the file and wakes its waiters (a condition variable per file).
///
/// Why a thread of its own: io_uring ties a request to the task that submitted it, and when that
/// task exits, its requests still queued for task work fail with `EFAULT` (seen with linked
/// fsyncs submitted by a writer thread that then returned). Callers' threads come and go; the
/// ring thread lives as long as the storage's files.
struct Ring {
    shared: Arc<Shared>,
    pool: Arc<BufPool>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

/// What the ring thread and the callers share.
struct Shared {
    /// Files with work to start.
    todo: Mutex<Vec<Arc<FileInner>>>,
    wake: OwnedFd,
    stop: AtomicBool,
}

impl fmt::Debug for Ring {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Ring").finish_non_exhaustive()
    }
}

impl Shared {
    fn wake(&self) {
        let one: u64 = 1;
        // SAFETY: writes 8 bytes from a valid u64 to our eventfd (non-blocking; a full counter
        // only means a wake-up is already pending).
        let _ = unsafe {
            libc::write(
                self.wake.as_raw_fd(),
                (&one as *const u64).cast(),
                std::mem::size_of::<u64>(),
            )
        };
    }

    fn take_todo(&self) -> Vec<Arc<FileInner>> {
        std::mem::take(&mut *self.todo.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

impl Ring {
    fn new(config: DirectConfig) -> io::Result<Ring> {
        let ring = IoUring::builder()
            .setup_cqsize(config.ring_entries * 2)
            .build(config.ring_entries)?;
        // SAFETY: plain system call; the result is checked before use.
        let efd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        if efd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `efd` is a fresh descriptor nobody else owns.
        let wake = unsafe { OwnedFd::from_raw_fd(efd) };
        let shared = Arc::new(Shared {
            todo: Mutex::new(Vec::new()),
            wake,
            stop: AtomicBool::new(false),
        });
        let core = Core {
            ring,
            config,
            ops: Vec::new(),
            free: Vec::new(),
            in_flight: 0,
            wake_fd: shared.wake.as_raw_fd(),
            wake_armed: false,
            cq_capacity: 2 * config.ring_entries as usize,
            starved: Vec::new(),
        };
        let for_thread = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("mirrorlog-direct-io".into())
            .spawn(move || core.run(&for_thread))?;
        Ok(Ring {
            shared,
            pool: Arc::new(BufPool::default()),
            thread: Mutex::new(Some(thread)),
        })
    }

    /// `file` has work: the ring thread starts it.
    fn kick(&self, file: &Arc<FileInner>) {
        let was_empty = {
            let mut todo = self.shared.todo.lock().unwrap_or_else(|p| p.into_inner());
            todo.push(Arc::clone(file));
            todo.len() == 1
        };
        // A non-empty queue already has a wake-up on its way (the ring thread empties the queue
        // only after consuming its wake-up).
        if was_empty {
            self.shared.wake();
        }
    }

    /// Waits until `done(state)` holds for `file` or the file failed; returns its state locked.
    fn wait<'a>(
        &self,
        file: &'a Arc<FileInner>,
        done: impl Fn(&FileState) -> bool,
    ) -> MutexGuard<'a, FileState> {
        let mut st = file.lock();
        if st.error.is_some() || done(&st) {
            return st;
        }
        // Let the ring thread look at the file once (a new sync wanted, a drain); from then on
        // every completion of the file makes it look again.
        drop(st);
        self.kick(file);
        st = file.lock();
        while st.error.is_none() && !done(&st) {
            st = file.changed.wait(st).unwrap_or_else(|p| p.into_inner());
        }
        st
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Release);
        self.shared.wake();
        if let Some(t) = self.thread.lock().unwrap_or_else(|p| p.into_inner()).take() {
            let _ = t.join();
        }
    }
}

enum Op {
    Write {
        file: Arc<FileInner>,
        chunk: Chunk,
        /// Padded bytes of the chunk already written (a short write resubmits the rest).
        done: usize,
        padded: usize,
    },
    Sync {
        file: Arc<FileInner>,
        target: u64,
    },
}

const WAKE_TOKEN: u64 = u64::MAX;

struct Core {
    ring: IoUring,
    config: DirectConfig,
    ops: Vec<Option<Op>>,
    free: Vec<usize>,
    /// Writes and syncs in flight (not counting the eventfd poll).
    in_flight: usize,
    wake_fd: RawFd,
    wake_armed: bool,
    /// Completion-queue entries: ops in flight (plus the eventfd poll) never exceed it, so the
    /// completion queue never overflows and a submission never fails with `EBUSY`.
    cq_capacity: usize,
    /// Files that had work left when the completion queue was full: looked at again after the
    /// next completions.
    starved: Vec<Arc<FileInner>>,
}

impl Core {
    fn push(&mut self, entry: io_uring::squeue::Entry) {
        loop {
            // SAFETY: every buffer an entry points to is owned by `self.ops` until its
            // completion is reaped (the eventfd poll points to no memory).
            if unsafe { self.ring.submission().push(&entry) }.is_ok() {
                return;
            }
            // Queue full: hand what is queued to the kernel, then retry.
            self.submit_now();
        }
    }

    /// Submits what is queued when fewer than `n` submission-queue entries are free, so the next
    /// `n` pushes land in one submission.
    fn make_room(&mut self, n: usize) {
        let free = {
            let sq = self.ring.submission();
            sq.capacity() - sq.len()
        };
        if free < n {
            self.submit_now();
        }
    }

    /// Submits what is queued without waiting.
    fn submit_now(&mut self) {
        loop {
            match self.ring.submit() {
                Ok(_) => return,
                Err(e) if e.raw_os_error() == Some(libc::EINTR) => {}
                // `EBUSY` (completion queue overflowing) cannot happen: ops in flight are
                // bounded by the completion queue's size (`cq_capacity`).
                Err(e) => ring_broken(&e),
            }
        }
    }

    /// The ring thread: sleep until a completion or a wake-up, handle every completion, start
    /// what the queued files can start; until the storage is dropped and nothing is in flight.
    fn run(mut self, shared: &Shared) {
        loop {
            if !self.wake_armed {
                let e = opcode::PollAdd::new(types::Fd(self.wake_fd), libc::POLLIN as u32)
                    .build()
                    .user_data(WAKE_TOKEN);
                self.push(e);
                self.wake_armed = true;
            }
            match self.ring.submit_and_wait(1) {
                Ok(_) => {}
                Err(e) if e.raw_os_error() == Some(libc::EINTR) => {}
                Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {}
                Err(e) => ring_broken(&e),
            }
            let mut work = self.reap_ready();
            work.append(&mut self.starved);
            work.extend(shared.take_todo());
            self.progress(work);
            if shared.stop.load(Ordering::Acquire) && self.in_flight == 0 {
                return;
            }
        }
    }

    /// Handles every completion already in the queue; returns the files they were about.
    fn reap_ready(&mut self) -> Vec<Arc<FileInner>> {
        let cqes: Vec<(u64, i32)> = self
            .ring
            .completion()
            .map(|c| (c.user_data(), c.result()))
            .collect();
        let mut touched: Vec<Arc<FileInner>> = Vec::new();
        for (ud, res) in cqes {
            if ud == WAKE_TOKEN {
                self.wake_armed = false;
                let mut n = 0u64;
                // SAFETY: reads 8 bytes into a valid u64 from our non-blocking eventfd.
                let _ = unsafe {
                    libc::read(
                        self.wake_fd,
                        (&mut n as *mut u64).cast(),
                        std::mem::size_of::<u64>(),
                    )
                };
            } else if let Some(f) = self.complete(ud, res) {
                touched.push(f);
            }
        }
        touched
    }

    /// Starts what `files` can start now.
    fn progress(&mut self, mut files: Vec<Arc<FileInner>>) {
        if files.is_empty() {
            return;
        }
        files.sort_by_key(|f| Arc::as_ptr(f) as usize);
        files.dedup_by_key(|f| Arc::as_ptr(f) as usize);
        for f in &files {
            self.pump(f);
        }
    }

    fn add_op(&mut self, op: Op) -> u64 {
        self.in_flight += 1;
        match self.free.pop() {
            Some(i) => {
                self.ops[i] = Some(op);
                i as u64
            }
            None => {
                self.ops.push(Some(op));
                (self.ops.len() - 1) as u64
            }
        }
    }

    fn release(&mut self, idx: u64) {
        self.in_flight -= 1;
        self.free.push(idx as usize);
    }

    fn write_entry(&self, idx: u64) -> io_uring::squeue::Entry {
        let Some(Op::Write {
            file,
            chunk,
            done,
            padded,
        }) = &self.ops[idx as usize]
        else {
            unreachable!("write op");
        };
        let flags = match file.config.durability {
            DirectDurability::Dsync => libc::RWF_DSYNC,
            DirectDurability::Fdatasync => 0,
        };
        // SAFETY: `done < padded <= cap`, so the pointer stays inside the chunk's buffer, which
        // lives in `self.ops[idx]` until the completion is reaped.
        let ptr = unsafe { chunk.buf.ptr.add(*done) };
        opcode::Write::new(
            types::Fd(file.direct.as_raw_fd()),
            ptr,
            (*padded - *done) as u32,
        )
        .offset(chunk.pos + *done as u64)
        .rw_flags(flags)
        .build()
        .user_data(idx)
    }

    /// Starts whatever `file` can start now: writes of ready chunks and of the current chunk
    /// that overlap nothing in flight, and a sync once its bytes are written (linked right
    /// behind the write when that write is the file's only one).
    fn pump(&mut self, file: &Arc<FileInner>) {
        let mut st = file.lock();
        if st.error.is_some() {
            return;
        }
        let fdatasync = file.config.durability == DirectDurability::Fdatasync;
        let mut starved = false;
        while st.in_flight.len() < self.config.max_in_flight_per_file {
            // Room for a write, its linked sync and the eventfd poll.
            if self.in_flight + 3 > self.cq_capacity {
                starved = true;
                break;
            }
            let from_ready = !st.ready.is_empty();
            let next_pos = match st.ready.front() {
                Some(c) => c.pos,
                None if st.logical_len > st.submitted_len => st.current.pos,
                None => break,
            };
            // Never two writes to one block at once: a write ending in a partial block is
            // followed by one starting at that block, which waits for it.
            if st
                .in_flight
                .back()
                .is_some_and(|w| align_up(w.end) > next_pos)
            {
                break;
            }
            let chunk = if from_ready {
                st.ready.pop_front().expect("a ready chunk")
            } else {
                // Retire the current chunk; the next one starts at its last block, with the
                // partial block's bytes copied over (rewritten by the next write).
                let end = st.current.pos + st.current.len as u64;
                let pos = align_down(end);
                let mut fresh = Chunk {
                    pos,
                    len: (end - pos) as usize,
                    buf: file.pool.get(self.config.chunk_bytes),
                };
                let from = (pos - st.current.pos) as usize;
                let n = fresh.len;
                fresh.buf.as_mut_slice()[..n]
                    .copy_from_slice(&st.current.buf.as_slice()[from..from + n]);
                std::mem::replace(&mut st.current, fresh)
            };
            let end = chunk.pos + chunk.len as u64;
            // An fdatasync can ride on this write when it is the file's only write and covers
            // everything a caller waits for.
            let link_sync = fdatasync
                && st.in_flight.is_empty()
                && st.sync_in_flight.is_none()
                && st.sync_wanted > st.durable_len
                && end >= st.sync_wanted
                && st.ready.is_empty();
            st.submitted_len = end;
            st.in_flight.push_back(InFlight {
                start: chunk.pos,
                end,
                done: false,
            });
            let padded = align_up(chunk.len as u64) as usize;
            // A reused buffer holds old bytes: the padding written past the end is zeros.
            let mut chunk = chunk;
            let len = chunk.len;
            chunk.buf.as_mut_slice()[len..padded].fill(0);
            let idx = self.add_op(Op::Write {
                file: Arc::clone(file),
                chunk,
                done: 0,
                padded,
            });
            let mut entry = self.write_entry(idx);
            if link_sync {
                entry = entry.flags(io_uring::squeue::Flags::IO_LINK);
                // The write and its linked sync go in one submission: a full queue submitted
                // between them would send the write with a dangling link (an ordinary request)
                // and the sync unordered with it, able to complete first and mark unwritten
                // bytes durable.
                self.make_room(2);
            }
            self.push(entry);
            if link_sync {
                self.push_sync(file, &mut st, end);
            }
        }
        if fdatasync
            && st.sync_in_flight.is_none()
            && st.sync_wanted > st.durable_len
            && st.written_len >= st.sync_wanted
        {
            if self.in_flight + 2 > self.cq_capacity {
                starved = true;
            } else {
                let target = st.written_len;
                self.push_sync(file, &mut st, target);
            }
        }
        if starved {
            self.starved.push(Arc::clone(file));
        }
    }

    fn push_sync(&mut self, file: &Arc<FileInner>, st: &mut FileState, target: u64) {
        st.sync_in_flight = Some(target);
        let idx = self.add_op(Op::Sync {
            file: Arc::clone(file),
            target,
        });
        let e = opcode::Fsync::new(types::Fd(file.direct.as_raw_fd()))
            .flags(types::FsyncFlags::DATASYNC)
            .build()
            .user_data(idx);
        self.push(e);
    }

    /// Handles one completion; returns the file it was about when that file may have more to
    /// start.
    fn complete(&mut self, idx: u64, res: i32) -> Option<Arc<FileInner>> {
        let op = self.ops[idx as usize].take().expect("a known op");
        match op {
            Op::Sync { file, target } => {
                self.release(idx);
                let mut st = file.lock();
                st.sync_in_flight = None;
                if res == -libc::ECANCELED {
                    // Its linked write was short and is being finished: sync again later.
                } else if res < 0 {
                    file.fail(&mut st, IoOp::SyncData, io::Error::from_raw_os_error(-res));
                } else {
                    st.durable_len = st.durable_len.max(target);
                }
                drop(st);
                file.changed.notify_all();
                Some(file)
            }
            Op::Write {
                file,
                chunk,
                done,
                padded,
            } => {
                let written = if res > 0 { res as usize } else { 0 };
                if res > 0 && done + written < padded && written.is_multiple_of(BLOCK) {
                    // A short write of whole blocks: write the rest.
                    self.ops[idx as usize] = Some(Op::Write {
                        file,
                        chunk,
                        done: done + written,
                        padded,
                    });
                    let e = self.write_entry(idx);
                    self.push(e);
                    return None;
                }
                self.release(idx);
                let mut st = file.lock();
                if res < 0 {
                    file.fail(&mut st, IoOp::WriteAt, io::Error::from_raw_os_error(-res));
                } else if done + written < padded {
                    file.fail(
                        &mut st,
                        IoOp::WriteAt,
                        io::Error::other(format!(
                            "short direct write: {written} of {} bytes at {}",
                            padded - done,
                            chunk.pos + done as u64
                        )),
                    );
                } else {
                    let start = chunk.pos;
                    if let Some(w) = st
                        .in_flight
                        .iter_mut()
                        .find(|w| w.start == start && !w.done)
                    {
                        w.done = true;
                    }
                    while st.in_flight.front().is_some_and(|w| w.done) {
                        let w = st.in_flight.pop_front().expect("front");
                        st.written_len = st.written_len.max(w.end);
                    }
                    if file.config.durability == DirectDurability::Dsync {
                        st.durable_len = st.written_len;
                    }
                    let budget = file.config.tail_cache_bytes;
                    st.evict(budget);
                }
                drop(st);
                file.changed.notify_all();
                file.pool.put(chunk.buf);
                Some(file)
            }
        }
    }
}

/// `io_uring_enter` failed for a reason other than an interruption or a full completion queue:
/// the kernel may still own buffers we cannot track any more, so stop rather than free them.
fn ring_broken(e: &io::Error) -> ! {
    tracing::error!(error = %e, "direct-I/O ring failed");
    std::process::abort()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::PwriteStorage;

    /// `MIRRORLOG_SKIP_IO_URING_TESTS=1` skips the tests that need io_uring (as
    /// `segment/tests/io_backends.rs` does) on a machine that forbids it.
    fn skip_uring() -> bool {
        std::env::var_os("MIRRORLOG_SKIP_IO_URING_TESTS").is_some_and(|v| v == "1")
    }

    fn storage(durability: DirectDurability, tail_cache_bytes: usize) -> DirectStorage {
        let config = DirectConfig {
            durability,
            preallocate_bytes: 64 << 10,
            chunk_bytes: 16 << 10,
            tail_cache_bytes,
            ..DirectConfig::default()
        };
        DirectStorage::new(Arc::new(PwriteStorage::new()), config).expect("direct storage")
    }

    fn pattern(seed: u8, n: usize) -> Bytes {
        (0..n)
            .map(|i| seed.wrapping_mul(31).wrapping_add(i as u8))
            .collect::<Vec<u8>>()
            .into()
    }

    #[test]
    fn appends_of_odd_sizes_read_back_from_memory_and_disk_and_trim_on_close() {
        if skip_uring() {
            return;
        }
        for durability in [DirectDurability::Dsync, DirectDurability::Fdatasync] {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("00000000000000000000.log");
            let s = storage(durability, 0);
            let f = s.open(&path, OpenMode::CreateNew).unwrap();
            let mut expect = Vec::new();
            for i in 0..200u32 {
                let b = pattern(i as u8, 1 + (i as usize * 997) % 9000);
                f.write_at(b.clone(), expect.len() as u64).unwrap();
                expect.extend_from_slice(&b);
                if i % 17 == 0 {
                    f.sync_data().unwrap();
                }
            }
            assert_eq!(f.len().unwrap(), expect.len() as u64);
            // Preallocated beyond the logical length while open.
            assert!(std::fs::metadata(&path).unwrap().len() > expect.len() as u64);
            let mut got = vec![0u8; expect.len()];
            f.read_exact_at(&mut got, 0).unwrap();
            assert_eq!(got, expect, "{durability:?}");
            let mut tail = vec![0u8; 100];
            f.read_exact_at(&mut tail, expect.len() as u64 - 100)
                .unwrap();
            assert_eq!(tail, expect[expect.len() - 100..]);
            f.sync_data().unwrap();
            drop(f);
            assert_eq!(std::fs::read(&path).unwrap(), expect, "{durability:?}");
        }
    }

    #[test]
    fn a_reopened_file_continues_after_its_partial_last_block() {
        if skip_uring() {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.log");
        let s = storage(DirectDurability::Dsync, 1 << 20);
        let first = pattern(1, 5000);
        let f = s.open(&path, OpenMode::CreateNew).unwrap();
        f.write_all_at(std::slice::from_ref(&first), 0, true)
            .unwrap();
        drop(f);
        let f = s.open(&path, OpenMode::ReadWrite).unwrap();
        assert_eq!(f.len().unwrap(), 5000);
        let second = pattern(2, 3000);
        f.write_all_at(std::slice::from_ref(&second), 5000, true)
            .unwrap();
        drop(f);
        let mut expect = first.to_vec();
        expect.extend_from_slice(&second);
        assert_eq!(std::fs::read(&path).unwrap(), expect);
    }

    #[test]
    fn set_len_truncates_and_appends_continue_from_there() {
        if skip_uring() {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.log");
        let s = storage(DirectDurability::Fdatasync, 1 << 20);
        let f = s.open(&path, OpenMode::CreateNew).unwrap();
        let a = pattern(3, 40_000);
        f.write_at(a.clone(), 0).unwrap();
        f.set_len(12_345).unwrap();
        f.sync_data().unwrap();
        assert_eq!(f.len().unwrap(), 12_345);
        let b = pattern(4, 7_000);
        f.write_at(b.clone(), 12_345).unwrap();
        f.finish_appends().unwrap();
        let mut expect = a[..12_345].to_vec();
        expect.extend_from_slice(&b);
        assert_eq!(std::fs::read(&path).unwrap(), expect);
        let mut got = vec![0u8; expect.len()];
        f.read_exact_at(&mut got, 0).unwrap();
        assert_eq!(got, expect);
    }

    #[test]
    fn a_write_inside_the_file_rewrites_those_bytes_in_place() {
        if skip_uring() {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.log");
        let s = storage(DirectDurability::Dsync, 0);
        let f = s.open(&path, OpenMode::CreateNew).unwrap();
        f.write_at(pattern(5, 10_000), 0).unwrap();
        f.write_all_at(&[Bytes::from_static(b"hello")], 4094, true)
            .unwrap();
        let mut got = [0u8; 5];
        f.read_exact_at(&mut got, 4094).unwrap();
        assert_eq!(&got, b"hello");
        let err = f.write_at(Bytes::from_static(b"x"), 20_000).unwrap_err();
        assert_eq!(err.op, IoOp::WriteAt);
        assert!(err.to_string().contains("hole"), "{err}");
        drop(f);
        let on_disk = std::fs::read(&path).unwrap();
        assert_eq!(on_disk.len(), 10_000);
        assert_eq!(&on_disk[4094..4099], b"hello");
    }

    #[test]
    fn only_writable_log_files_go_direct() {
        if skip_uring() {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let s = storage(DirectDurability::Dsync, 0);
        let log = s
            .open(&dir.path().join("x.log"), OpenMode::CreateNew)
            .unwrap();
        assert!(format!("{log:?}").starts_with("DirectFile"));
        let other = s
            .open(&dir.path().join("x.snapshot"), OpenMode::CreateNew)
            .unwrap();
        assert!(!format!("{other:?}").starts_with("DirectFile"));
        drop(log);
        let ro = s.open(&dir.path().join("x.log"), OpenMode::Read).unwrap();
        assert!(!format!("{ro:?}").starts_with("DirectFile"));
    }

    #[test]
    fn configs_out_of_range_are_rejected_with_the_field_named() {
        let ok = DirectConfig::default();
        assert!(ok.validate().is_ok());
        let bad = [
            DirectConfig {
                preallocate_bytes: 1000,
                ..ok
            },
            DirectConfig {
                chunk_bytes: 0,
                ..ok
            },
            DirectConfig {
                max_in_flight_per_file: 0,
                ..ok
            },
            DirectConfig {
                tail_cache_bytes: 2 << 30,
                ..ok
            },
            DirectConfig {
                ring_entries: 100,
                ..ok
            },
        ];
        let fields = [
            "preallocate_bytes",
            "chunk_bytes",
            "max_in_flight_per_file",
            "tail_cache_bytes",
            "ring_entries",
        ];
        for (c, field) in bad.iter().zip(fields) {
            let e = c.validate().unwrap_err();
            assert!(e.starts_with(field), "{e}");
        }
        let sim = DirectStorage::new(Arc::new(crate::io::SimStorage::new()), ok).unwrap_err();
        assert!(sim.to_string().contains("real file system"), "{sim}");
    }

    #[test]
    fn data_ranges_cover_every_appended_byte_and_nothing_past_the_end() {
        if skip_uring() {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let s = storage(DirectDurability::Dsync, 0);
        let f = s
            .open(&dir.path().join("d.log"), OpenMode::CreateNew)
            .unwrap();
        f.write_at(pattern(9, 10_000), 0).unwrap();
        // Unwritten bytes count as data (they are in memory until written).
        let (start, end) = f.data_range(0).unwrap().unwrap();
        assert_eq!(start, 0);
        assert!(end >= 10_000, "{end}");
        assert_eq!(f.data_range(10_000).unwrap(), None);
        // Past the end only preallocated space: the pwrite backend reading the same file sees
        // no data there either (or, without hole reporting, data it will read as zeros).
        f.sync_data().unwrap();
        let pw = PwriteStorage::new()
            .open(&dir.path().join("d.log"), OpenMode::Read)
            .unwrap();
        let phys = pw.len().unwrap();
        assert!(phys > 10_000);
        let (s0, _) = pw.data_range(0).unwrap().unwrap();
        assert_eq!(s0, 0);
        if let Some((a, b)) = pw.data_range(16_384).unwrap() {
            assert!(a >= 16_384 && b <= phys && a < b, "{a}..{b}");
        }
    }

    #[test]
    fn durability_names_round_trip() {
        for d in [DirectDurability::Dsync, DirectDurability::Fdatasync] {
            assert_eq!(DirectDurability::parse(d.as_str()), Some(d));
        }
        assert_eq!(DirectDurability::parse("fsync"), None);
    }

    #[test]
    fn appends_from_threads_that_exit_at_once_still_reach_the_disk() {
        if skip_uring() {
            return;
        }
        // io_uring fails requests queued for a submitting task that exits (EFAULT): only the
        // ring thread may submit.
        for durability in [DirectDurability::Dsync, DirectDurability::Fdatasync] {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("e.log");
            let s = storage(durability, 0);
            let f = s.open(&path, OpenMode::CreateNew).unwrap();
            let mut expect = Vec::new();
            for i in 0..64u8 {
                let b = pattern(i, 5000 + i as usize * 300);
                let (f, pos) = (&f, expect.len() as u64);
                let durable = i % 2 == 0;
                std::thread::scope(|scope| {
                    scope.spawn(|| {
                        f.write_all_at(std::slice::from_ref(&b), pos, durable)
                            .unwrap()
                    });
                });
                expect.extend_from_slice(&b);
            }
            f.sync_data().unwrap();
            drop(f);
            assert_eq!(std::fs::read(&path).unwrap(), expect, "{durability:?}");
        }
    }

    #[test]
    fn many_threads_appending_to_many_files_all_reach_the_disk() {
        if skip_uring() {
            return;
        }
        for durability in [DirectDurability::Dsync, DirectDurability::Fdatasync] {
            let dir = tempfile::tempdir().unwrap();
            let s = DirectStorage::new(
                Arc::new(PwriteStorage::new()),
                DirectConfig {
                    durability,
                    preallocate_bytes: 1 << 20,
                    ..DirectConfig::default()
                },
            )
            .unwrap();
            std::thread::scope(|scope| {
                for t in 0..48u8 {
                    let s = &s;
                    let path = dir.path().join(format!("{t}.log"));
                    scope.spawn(move || {
                        let f = s.open(&path, OpenMode::CreateNew).unwrap();
                        let mut expect = Vec::new();
                        for i in 0..40 {
                            let b = pattern(t ^ i, 3000 + 7000 * (i as usize % 7));
                            let durable = i % 3 == 0;
                            f.write_all_at(std::slice::from_ref(&b), expect.len() as u64, durable)
                                .unwrap();
                            expect.extend_from_slice(&b);
                        }
                        f.sync_data().unwrap();
                        drop(f);
                        assert_eq!(std::fs::read(&path).unwrap(), expect, "{durability:?}");
                    });
                }
            });
        }
    }
}

#[cfg(test)]
/// Ordering and truncation races in the ring's durability bookkeeping (found in review).
mod ring_ordering_tests {
    use super::*;
    use crate::io::PwriteStorage;

    fn cfg(
        durability: DirectDurability,
        chunk_bytes: usize,
        ring_entries: u32,
        mif: usize,
    ) -> DirectConfig {
        DirectConfig {
            durability,
            preallocate_bytes: 64 << 20,
            chunk_bytes,
            max_in_flight_per_file: mif,
            tail_cache_bytes: 1 << 20,
            ring_entries,
        }
    }

    fn manual_core(config: DirectConfig) -> Core {
        let ring = IoUring::builder()
            .setup_cqsize(config.ring_entries * 2)
            .build(config.ring_entries)
            .unwrap();
        Core {
            ring,
            config,
            ops: Vec::new(),
            free: Vec::new(),
            in_flight: 0,
            wake_fd: -1,
            wake_armed: true,
            cq_capacity: 2 * config.ring_entries as usize,
            starved: Vec::new(),
        }
    }

    /// A write pushed with IO_LINK and its linked fdatasync always go in one submission. When the
    /// write took the queue's last free entry, the pair used to be split: the write submitted
    /// alone (a dangling link head is an ordinary request) and the fdatasync in the next
    /// submission, unordered with it, so its completion could mark unwritten bytes durable.
    #[test]
    fn linked_sync_split_by_a_full_submission_queue_runs_unordered() {
        let config = cfg(DirectDurability::Fdatasync, 4 << 20, 8, 7);
        let storage = DirectStorage::new(Arc::new(PwriteStorage::new()), config).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let mut violations = 0;
        let mut split = 0;
        for round in 0..20 {
            let a = DirectFile::open(
                &dir.path().join(format!("a{round}.log")),
                OpenMode::CreateNew,
                config,
                Arc::clone(&storage.ring),
            )
            .unwrap();
            let b = DirectFile::open(
                &dir.path().join(format!("b{round}.log")),
                OpenMode::CreateNew,
                config,
                Arc::clone(&storage.ring),
            )
            .unwrap();
            let mut core = manual_core(config);
            {
                // File A: 7 full chunks ready (fills 7 of the 8 submission-queue entries).
                let mut st = a.inner.lock();
                for _ in 0..8 {
                    st = a.append(st, Bytes::from(vec![7u8; 4 << 20])).unwrap();
                }
            }
            {
                // File B: one durable append of one chunk, its sync wanted.
                let st = b.inner.lock();
                let mut st = b.append(st, Bytes::from(vec![9u8; 4 << 20])).unwrap();
                st.sync_wanted = st.logical_len;
            }
            core.pump(&a.inner);
            assert_eq!(a.inner.lock().in_flight.len(), 7);
            core.pump(&b.inner);
            // Only B's fdatasync is left in the submission queue: its write (flagged IO_LINK) was
            // already submitted, as the last entry of the previous submission.
            if core.ring.submission().len() == 1 {
                split += 1;
            }
            core.submit_now();
            while core.in_flight > 0 {
                core.ring.submit_and_wait(1).unwrap();
                let cqes: Vec<(u64, i32)> = core
                    .ring
                    .completion()
                    .map(|c| (c.user_data(), c.result()))
                    .collect();
                for (ud, res) in cqes {
                    let f = core.complete(ud, res);
                    if let Some(f) = f {
                        let st = f.lock();
                        if Arc::ptr_eq(&f, &b.inner) && st.durable_len > st.written_len {
                            violations += 1;
                        }
                        drop(st);
                        core.pump(&f);
                    }
                }
            }
            assert!(a.inner.lock().error.is_none());
            drop(a);
            drop(b);
        }
        eprintln!(
            "split submissions: {split}/20, sync completed before its write: {violations}/20"
        );
        assert_eq!(
            split, 0,
            "the linked fdatasync was separated from its write in {split}/20 rounds; durable-before-written observed {violations} times"
        );
    }

    /// An `fdatasync` from the caller's thread (here a preallocation's) waits for the ring's
    /// `fdatasync` of the file in flight. It used to run beside it: the two could split the
    /// kernel's one report of a failed write-back, so the one answered `Ok` acknowledged what
    /// the other's failure covered. The ring's sync is left in flight (submitted, its
    /// completion not reaped) until the appender is seen either waiting or done.
    #[test]
    fn a_callers_fdatasync_waits_for_the_rings_fdatasync_of_the_file() {
        let config = DirectConfig {
            preallocate_bytes: 4096,
            ..cfg(DirectDurability::Fdatasync, 16 << 10, 8, 8)
        };
        let storage = DirectStorage::new(Arc::new(PwriteStorage::new()), config).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let f = DirectFile::open(
            &dir.path().join("0.log"),
            OpenMode::CreateNew,
            config,
            Arc::clone(&storage.ring),
        )
        .unwrap();
        let mut core = manual_core(config);
        {
            let st = f.inner.lock();
            let mut st = f.append(st, Bytes::from(vec![1u8; 100])).unwrap();
            st.sync_wanted = st.logical_len;
        }
        core.pump(&f.inner);
        assert!(f.inner.lock().sync_in_flight.is_some(), "the ring's sync");
        core.submit_now();
        let beside = std::thread::scope(|s| {
            // Past the 4 KiB preallocated: fallocate, then an fdatasync from this thread.
            let appender = s.spawn(|| {
                let st = f.inner.lock();
                f.append(st, Bytes::from(vec![2u8; 8192])).map(drop)
            });
            // Until it waits, or is done with the ring's sync still in flight.
            let beside = loop {
                let st = f.inner.lock();
                if st.ring_sync_waits > 0 {
                    break false;
                }
                if appender.is_finished() {
                    break true;
                }
                drop(st);
                std::thread::yield_now();
            };
            // The ring's sync completes (also when the test fails: a drop waits for it).
            while core.in_flight > 0 {
                core.ring.submit_and_wait(1).unwrap();
                let cqes: Vec<(u64, i32)> = (core.ring.completion())
                    .map(|c| (c.user_data(), c.result()))
                    .collect();
                for (ud, res) in cqes {
                    core.complete(ud, res);
                }
            }
            let appended = appender.join();
            assert!(
                !beside,
                "the caller's fdatasync ran while the ring's was in flight"
            );
            appended.unwrap().unwrap();
            beside
        });
        assert!(!beside);
        let st = f.inner.lock();
        assert!(st.error.is_none());
        assert_eq!(st.durable_len, 100);
        assert!(st.allocated >= 8292, "preallocated: {}", st.allocated);
    }

    /// A truncation (`set_len`) waits for an fdatasync in flight. It used to drain only the
    /// writes: the sync's completion then raised `durable_len` to the old length after the cut,
    /// so later appends below that length were acknowledged by `sync_data` without any sync.
    #[test]
    fn a_sync_in_flight_across_a_truncation_acknowledges_later_appends_unsynced() {
        let config = cfg(DirectDurability::Fdatasync, 256 << 10, 256, 8);
        let storage = DirectStorage::new(Arc::new(PwriteStorage::new()), config).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let mut hit = None;
        for round in 0..200 {
            let f = DirectFile::open(
                &dir.path().join(format!("{round}.log")),
                OpenMode::CreateNew,
                config,
                Arc::clone(&storage.ring),
            )
            .unwrap();
            f.write_at(Bytes::from(vec![1u8; 200_000]), 0).unwrap();
            std::thread::scope(|s| {
                let syncer = s.spawn(|| f.sync_data());
                // Wait for the fdatasync to be in flight, then truncate (as a log truncation
                // under the log lock does while an acks=all producer waits outside it).
                loop {
                    if f.inner.lock().sync_in_flight.is_some() || syncer.is_finished() {
                        break;
                    }
                    std::hint::spin_loop();
                }
                f.set_len(1000).unwrap();
                f.sync_data().unwrap();
                syncer.join().unwrap().unwrap();
            });
            let stale = {
                let st = f.inner.lock();
                st.durable_len > st.logical_len
            };
            if !stale {
                continue;
            }
            // A durable append of bytes [1000, 151000) after the truncation.
            f.write_at(Bytes::from(vec![2u8; 150_000]), 1000).unwrap();
            f.sync_data().unwrap();
            let st = f.inner.lock();
            hit = Some((
                round,
                st.durable_len,
                st.logical_len,
                st.written_len,
                st.in_flight.len(),
                st.sync_in_flight,
            ));
            drop(st);
            break;
        }
        if let Some((round, durable, logical, written, inflight, sync)) = hit {
            panic!(
                "round {round}: sync_data returned Ok with durable_len={durable} > logical_len={logical}; \
                 written_len={written}, writes in flight={inflight}, sync in flight={sync:?}: \
                 the appended bytes were acknowledged durable without an fdatasync after their write"
            );
        }
    }
}
