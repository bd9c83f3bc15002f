//! The simulated backend: an in-memory file system with a live-vs-durable model, fault
//! injection and crashes.
//!
//! # Model
//!
//! - **Files** are inodes holding two byte vectors: `live` (what reads see: the page cache) and
//!   `durable` (what a crash keeps: the disk). Writes and `set_len` change `live`;
//!   [`StorageFile::sync_data`] (or a durable `write_all_at`) copies `live` to `durable`, length
//!   included. Writing past the end zero-fills the gap, like a sparse file.
//! - **Names** live in two directory views, path → inode: the live view (what `open`, `exists`,
//!   `list_dir` see) and the durable view. Creating, renaming and removing a file change the live
//!   view at once and reach the durable view only at [`Storage::sync_dir`] of the directory
//!   holding the name: `sync_dir(d)` makes the durable entries directly under `d` equal the live
//!   ones. So a created file whose directory was never synced vanishes in a crash even if its data
//!   was synced, and an unsynced rename comes back under its old name. A rename across
//!   directories becomes durable half by half (each side at its own directory's sync).
//! - **Directories** themselves are simplified: `create_dir_all` and renaming a directory are
//!   durable immediately (they are rare, setup-time operations; the model's point is file names
//!   and bytes).
//! - Open handles refer to inodes, so they follow renames and survive removal, as with POSIX
//!   file descriptors. An inode no name and no handle refers to is freed.
//! - Files are capped at [`SIM_FILE_BYTES_MAX`]; writing or extending beyond fails with `EFBIG`.
//!
//! # Faults
//!
//! [`SimStorage::inject`] arms a [`Fault`]: the first operation of kind `op` whose path contains
//! `path_contains`, after skipping `after` such operations, fails; each fault fires once. A fault
//! is checked before the operation does anything, so apart from [`FaultKind::ShortWrite`] and
//! [`FaultKind::SyncFails`] a faulted operation has no effect. `write_all_at` is one
//! [`IoOp::WriteAt`] operation (over the concatenation of its buffers), followed when durable by
//! one [`IoOp::SyncData`] operation.
//!
//! # Crashes
//!
//! [`SimStorage::crash`] returns a new, independent file system holding the durable view: each
//! durably named file with its durable bytes, plus optionally a torn tail ([`TornTail`]).
//! [`SimStorage::syncs_completed`] counts completed syncs and [`SimStorage::halt_after_syncs`]
//! lets a test cut the power right after the k-th one.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io;
use std::os::fd::RawFd;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use bytes::Bytes;

use super::{IoError, IoOp, IoResult, OpenMode, Storage, StorageFile};

/// The largest file the simulator holds (1 GiB); beyond it writes fail with `EFBIG`.
pub const SIM_FILE_BYTES_MAX: u64 = 1 << 30;

/// A fault armed with [`SimStorage::inject`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fault {
    /// The operation that fails.
    pub op: IoOp,
    /// Only operations on a path containing this string match (`None`: every path).
    pub path_contains: Option<String>,
    /// How many matching operations succeed before the fault fires.
    pub after: u32,
    /// How the operation fails.
    pub kind: FaultKind,
}

impl Fault {
    /// A fault on the next `op` on any path.
    pub fn new(op: IoOp, kind: FaultKind) -> Self {
        Self {
            op,
            path_contains: None,
            after: 0,
            kind,
        }
    }

    /// Restricts the fault to paths containing `s`.
    pub fn on_path(mut self, s: impl Into<String>) -> Self {
        self.path_contains = Some(s.into());
        self
    }

    /// Lets `n` matching operations succeed first.
    pub fn after(mut self, n: u32) -> Self {
        self.after = n;
        self
    }
}

/// How a faulted operation fails.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FaultKind {
    /// `EIO`; nothing happens.
    Eio,
    /// `ENOSPC`; nothing happens (a real ENOSPC may write part of a buffer; see `ShortWrite`).
    NoSpace,
    /// Only for [`IoOp::WriteAt`]: the first `bytes` bytes land in the file (live, not durable),
    /// then the write fails with `EIO`. A real short write is retried by the real backends, so a
    /// caller only ever sees one as an error after the retry failed too: partial bytes on disk
    /// plus an error, which is what this produces.
    ShortWrite {
        /// How many bytes of the write land before the failure.
        bytes: usize,
    },
    /// Only for [`IoOp::SyncData`]: the sync fails with `EIO` and, as Linux does after a failed
    /// writeback, the dirty pages are dropped: the file's live bytes revert to its durable bytes,
    /// and a later successful sync will not bring the lost writes back.
    SyncFails,
}

/// What a [`SimStorage::crash`] keeps beyond the durable bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TornTail {
    /// Exactly the durable bytes.
    None,
    /// For each file whose (durable) path contains `file_contains`, the first `bytes` live bytes
    /// past the durable length (fewer if fewer exist) survive as well: a write torn by the crash.
    KeepUnsynced {
        /// Which files get a torn tail.
        file_contains: String,
        /// How many unsynced bytes each keeps at most.
        bytes: usize,
    },
}

type InodeId = u64;

#[derive(Debug, Default)]
struct Inode {
    live: Vec<u8>,
    durable: Vec<u8>,
    handles: usize,
}

#[derive(Debug, Default)]
struct State {
    inodes: HashMap<InodeId, Inode>,
    next_inode: InodeId,
    live: BTreeMap<PathBuf, InodeId>,
    durable: BTreeMap<PathBuf, InodeId>,
    dirs: BTreeSet<PathBuf>,
    faults: Vec<Fault>,
    syncs_completed: u64,
    halt_after_syncs: Option<u64>,
}

fn os_err(errno: i32) -> io::Error {
    io::Error::from_raw_os_error(errno)
}

fn is_root(p: &Path) -> bool {
    p.as_os_str().is_empty() || p == Path::new("/")
}

fn parent_of(p: &Path) -> &Path {
    p.parent().unwrap_or(Path::new(""))
}

impl State {
    fn dir_exists(&self, p: &Path) -> bool {
        is_root(p) || self.dirs.contains(p)
    }

    /// Takes the first armed fault matching `op` on `path`, counting down skips.
    fn take_fault(&mut self, op: IoOp, path: &Path) -> Option<FaultKind> {
        let path = path.to_string_lossy();
        let mut fired = None;
        for (i, f) in self.faults.iter_mut().enumerate() {
            if f.op != op
                || f.path_contains
                    .as_deref()
                    .is_some_and(|s| !path.contains(s))
            {
                continue;
            }
            if f.after > 0 {
                f.after -= 1;
            } else if fired.is_none() {
                fired = Some(i);
            }
        }
        fired.map(|i| self.faults.remove(i).kind)
    }

    /// The error of a fault kind that has no side effect.
    fn plain_fault(kind: &FaultKind) -> io::Error {
        match kind {
            FaultKind::NoSpace => os_err(libc::ENOSPC),
            FaultKind::Eio | FaultKind::ShortWrite { .. } | FaultKind::SyncFails => {
                os_err(libc::EIO)
            }
        }
    }

    /// Fails `op` on `path` if a fault without side effects is armed for it.
    fn check(&mut self, op: IoOp, path: &Path) -> io::Result<()> {
        match self.take_fault(op, path) {
            Some(kind) => Err(Self::plain_fault(&kind)),
            None => Ok(()),
        }
    }

    /// Whether power is cut: syncs no longer reach the disk.
    fn halted(&self) -> bool {
        self.halt_after_syncs
            .is_some_and(|k| self.syncs_completed >= k)
    }

    fn inode(&mut self, id: InodeId) -> &mut Inode {
        self.inodes
            .get_mut(&id)
            .expect("open handles keep their inode")
    }

    /// Frees `id` once no name and no handle refers to it.
    fn collect(&mut self, id: InodeId) {
        let referenced = self.inodes.get(&id).is_some_and(|i| i.handles > 0)
            || self.live.values().any(|&v| v == id)
            || self.durable.values().any(|&v| v == id);
        if !referenced {
            self.inodes.remove(&id);
        }
    }

    /// Writes `data` at `pos` of `id`'s live bytes, zero-filling any gap.
    fn write(&mut self, id: InodeId, data: &[u8], pos: u64) -> io::Result<()> {
        let end = pos
            .checked_add(data.len() as u64)
            .filter(|&e| e <= SIM_FILE_BYTES_MAX)
            .ok_or_else(|| os_err(libc::EFBIG))?;
        if data.is_empty() {
            return Ok(());
        }
        let live = &mut self.inode(id).live;
        let (pos, end) = (pos as usize, end as usize);
        if live.len() < end {
            live.resize(end, 0);
        }
        live[pos..end].copy_from_slice(data);
        Ok(())
    }

    /// `fdatasync` of `id` on behalf of the file at `path`.
    fn sync(&mut self, id: InodeId, path: &Path) -> io::Result<()> {
        match self.take_fault(IoOp::SyncData, path) {
            Some(FaultKind::SyncFails) => {
                let inode = self.inode(id);
                inode.live = inode.durable.clone();
                return Err(os_err(libc::EIO));
            }
            Some(kind) => return Err(Self::plain_fault(&kind)),
            None => {}
        }
        if self.halted() {
            return Err(os_err(libc::EIO));
        }
        let inode = self.inode(id);
        inode.durable = inode.live.clone();
        self.syncs_completed += 1;
        Ok(())
    }
}

/// The simulated backend. Clones share one file system; [`SimStorage::crash`] makes a new one.
#[derive(Debug, Clone, Default)]
pub struct SimStorage {
    state: Arc<Mutex<State>>,
}

impl SimStorage {
    /// The backend's [`Storage::name`].
    pub const NAME: &'static str = "simulated";

    /// An empty file system (only the root directory exists).
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // The state is consistent between operations: a panic in a test thread must not hide
        // the file system from the assertions that follow.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Arms `fault`; it fires once.
    ///
    /// # Panics
    ///
    /// If `ShortWrite` is armed for anything but [`IoOp::WriteAt`], or `SyncFails` for anything
    /// but [`IoOp::SyncData`].
    pub fn inject(&self, fault: Fault) {
        match fault.kind {
            FaultKind::ShortWrite { .. } => {
                assert_eq!(fault.op, IoOp::WriteAt, "ShortWrite is a write fault")
            }
            FaultKind::SyncFails => {
                assert_eq!(fault.op, IoOp::SyncData, "SyncFails is a sync_data fault")
            }
            FaultKind::Eio | FaultKind::NoSpace => {}
        }
        self.lock().faults.push(fault);
    }

    /// How many armed faults have not fired yet.
    pub fn pending_faults(&self) -> usize {
        self.lock().faults.len()
    }

    /// How many syncs (`sync_data`, durable `write_all_at`, `sync_dir`) completed successfully.
    pub fn syncs_completed(&self) -> u64 {
        self.lock().syncs_completed
    }

    /// Cuts the power after `k` completed syncs (counted from the start, as
    /// [`SimStorage::syncs_completed`] does): every later sync fails with `EIO` and changes
    /// nothing, while writes keep landing in the live bytes (so a [`TornTail`] can keep some).
    /// A test runs its workload until it fails, then [`SimStorage::crash`]es.
    pub fn halt_after_syncs(&self, k: u64) {
        self.lock().halt_after_syncs = Some(k);
    }

    /// The live bytes of the file named `path` (what a read sees), if it exists.
    pub fn file_bytes(&self, path: &Path) -> Option<Vec<u8>> {
        let st = self.lock();
        st.live.get(path).map(|id| st.inodes[id].live.clone())
    }

    /// The durable bytes of the file named `path` in the live view, if it exists.
    pub fn durable_bytes(&self, path: &Path) -> Option<Vec<u8>> {
        let st = self.lock();
        st.live.get(path).map(|id| st.inodes[id].durable.clone())
    }

    /// How many inodes are held (files named live or durably, or still open).
    pub fn inode_count(&self) -> usize {
        self.lock().inodes.len()
    }

    /// The file system a crash leaves: the durable names, each with its durable bytes and the
    /// torn tail `torn` asks for. Directories are kept; faults, handles and counters are not.
    pub fn crash(&self, torn: TornTail) -> SimStorage {
        let st = self.lock();
        let mut next = State {
            dirs: st.dirs.clone(),
            ..State::default()
        };
        // Two durable names may share an inode (a rename durable on one side only).
        let mut renumber: HashMap<InodeId, InodeId> = HashMap::new();
        for (path, old) in &st.durable {
            let new = *renumber.entry(*old).or_insert_with(|| {
                let id = next.next_inode;
                next.next_inode += 1;
                let inode = &st.inodes[old];
                let mut bytes = inode.durable.clone();
                if let TornTail::KeepUnsynced {
                    file_contains,
                    bytes: keep,
                } = &torn
                    && path.to_string_lossy().contains(file_contains.as_str())
                    && inode.live.len() > bytes.len()
                {
                    let end = inode.live.len().min(bytes.len() + keep);
                    bytes.extend_from_slice(&inode.live[inode.durable.len()..end]);
                }
                next.inodes.insert(
                    id,
                    Inode {
                        live: bytes.clone(),
                        durable: bytes,
                        handles: 0,
                    },
                );
                id
            });
            next.live.insert(path.clone(), new);
            next.durable.insert(path.clone(), new);
        }
        SimStorage {
            state: Arc::new(Mutex::new(next)),
        }
    }
}

impl Storage for SimStorage {
    fn name(&self) -> &'static str {
        Self::NAME
    }

    fn open(&self, path: &Path, mode: OpenMode) -> IoResult<Arc<dyn StorageFile>> {
        let op = mode.op();
        let err = |e| IoError::new(op, path, e);
        let mut st = self.lock();
        st.check(op, path).map_err(err)?;
        if st.dirs.contains(path) || is_root(path) {
            return Err(err(os_err(libc::EISDIR)));
        }
        if !st.dir_exists(parent_of(path)) {
            return Err(err(os_err(libc::ENOENT)));
        }
        let id = match (st.live.get(path).copied(), mode) {
            (Some(_), OpenMode::CreateNew) => return Err(err(os_err(libc::EEXIST))),
            (Some(id), _) => id,
            (None, OpenMode::Read | OpenMode::ReadWrite) => {
                return Err(err(os_err(libc::ENOENT)));
            }
            (None, OpenMode::CreateOrOpen | OpenMode::CreateNew) => {
                let id = st.next_inode;
                st.next_inode += 1;
                st.inodes.insert(id, Inode::default());
                st.live.insert(path.to_path_buf(), id);
                id
            }
        };
        st.inode(id).handles += 1;
        Ok(Arc::new(SimFile {
            state: Arc::clone(&self.state),
            inode: id,
            path: path.to_path_buf(),
            writable: mode.is_writable(),
        }))
    }

    fn rename(&self, from: &Path, to: &Path) -> IoResult<()> {
        let err = |e| IoError::new(IoOp::Rename, from, e);
        let mut st = self.lock();
        st.check(IoOp::Rename, from).map_err(err)?;
        if !st.dir_exists(parent_of(to)) {
            return Err(err(os_err(libc::ENOENT)));
        }
        if st.dirs.contains(from) {
            // Directory rename: applied to both views at once (see the module docs).
            if st.live.contains_key(to) {
                return Err(err(os_err(libc::ENOTDIR)));
            }
            if to.starts_with(from) {
                return Err(err(os_err(libc::EINVAL)));
            }
            if st.dirs.contains(to) && st.dirs.iter().any(|d| parent_of(d) == to)
                || st.live.keys().any(|p| p.starts_with(to))
            {
                return Err(err(os_err(libc::ENOTEMPTY)));
            }
            let moved = |p: &PathBuf| -> Option<PathBuf> {
                p.strip_prefix(from).ok().map(|rest| to.join(rest))
            };
            let rebase = |m: &BTreeMap<PathBuf, InodeId>| -> BTreeMap<PathBuf, InodeId> {
                m.iter()
                    .map(|(p, &id)| (moved(p).unwrap_or_else(|| p.clone()), id))
                    .collect()
            };
            st.live = rebase(&st.live);
            st.durable = rebase(&st.durable);
            st.dirs = st
                .dirs
                .iter()
                .map(|d| moved(d).unwrap_or_else(|| d.clone()))
                .collect();
            return Ok(());
        }
        let Some(id) = st.live.remove(from) else {
            return Err(err(os_err(libc::ENOENT)));
        };
        if st.dirs.contains(to) {
            st.live.insert(from.to_path_buf(), id);
            return Err(err(os_err(libc::EISDIR)));
        }
        if let Some(replaced) = st.live.insert(to.to_path_buf(), id) {
            st.collect(replaced);
        }
        Ok(())
    }

    fn remove(&self, path: &Path) -> IoResult<()> {
        let err = |e| IoError::new(IoOp::Remove, path, e);
        let mut st = self.lock();
        st.check(IoOp::Remove, path).map_err(err)?;
        if st.dirs.contains(path) {
            return Err(err(os_err(libc::EISDIR)));
        }
        let Some(id) = st.live.remove(path) else {
            return Err(err(os_err(libc::ENOENT)));
        };
        st.collect(id);
        Ok(())
    }

    fn exists(&self, path: &Path) -> bool {
        let st = self.lock();
        st.dir_exists(path) || st.live.contains_key(path)
    }

    fn sync_dir(&self, dir: &Path) -> IoResult<()> {
        let err = |e| IoError::new(IoOp::SyncDir, dir, e);
        let mut st = self.lock();
        st.check(IoOp::SyncDir, dir).map_err(err)?;
        if !st.dir_exists(dir) {
            return Err(err(os_err(libc::ENOENT)));
        }
        if st.halted() {
            return Err(err(os_err(libc::EIO)));
        }
        let dropped: Vec<(PathBuf, InodeId)> = st
            .durable
            .iter()
            .filter(|(p, _)| parent_of(p) == dir)
            .map(|(p, &id)| (p.clone(), id))
            .collect();
        for (p, _) in &dropped {
            st.durable.remove(p);
        }
        let added: Vec<(PathBuf, InodeId)> = st
            .live
            .iter()
            .filter(|(p, _)| parent_of(p) == dir)
            .map(|(p, &id)| (p.clone(), id))
            .collect();
        st.durable.extend(added);
        for (_, id) in dropped {
            st.collect(id);
        }
        st.syncs_completed += 1;
        Ok(())
    }

    fn list_dir(&self, dir: &Path) -> IoResult<Vec<PathBuf>> {
        let err = |e| IoError::new(IoOp::ListDir, dir, e);
        let mut st = self.lock();
        st.check(IoOp::ListDir, dir).map_err(err)?;
        if !st.dir_exists(dir) {
            return Err(err(if st.live.contains_key(dir) {
                os_err(libc::ENOTDIR)
            } else {
                os_err(libc::ENOENT)
            }));
        }
        let mut out: Vec<PathBuf> = st
            .live
            .keys()
            .chain(st.dirs.iter())
            .filter(|p| parent_of(p) == dir && !is_root(p))
            .cloned()
            .collect();
        out.sort();
        Ok(out)
    }

    fn create_dir_all(&self, dir: &Path) -> IoResult<()> {
        let err = |e| IoError::new(IoOp::CreateDir, dir, e);
        let mut st = self.lock();
        st.check(IoOp::CreateDir, dir).map_err(err)?;
        let missing: Vec<PathBuf> = dir
            .ancestors()
            .filter(|a| !st.dir_exists(a))
            .map(Path::to_path_buf)
            .collect();
        if missing.iter().any(|a| st.live.contains_key(a)) {
            return Err(err(os_err(libc::EEXIST)));
        }
        st.dirs.extend(missing);
        Ok(())
    }
}

/// An open file of the simulated backend (a handle on an inode).
#[derive(Debug)]
pub struct SimFile {
    state: Arc<Mutex<State>>,
    inode: InodeId,
    path: PathBuf,
    writable: bool,
}

impl SimFile {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn err(&self, op: IoOp, e: io::Error) -> IoError {
        IoError::new(op, &self.path, e)
    }

    fn check_writable(&self, op: IoOp, errno: i32) -> IoResult<()> {
        if self.writable {
            Ok(())
        } else {
            Err(self.err(op, os_err(errno)))
        }
    }

    /// One `WriteAt` operation over `data` (faults apply to it as a whole).
    fn write_bytes(&self, st: &mut State, data: &[u8], pos: u64) -> IoResult<()> {
        self.check_writable(IoOp::WriteAt, libc::EBADF)?;
        let err = |e| self.err(IoOp::WriteAt, e);
        match st.take_fault(IoOp::WriteAt, &self.path) {
            Some(FaultKind::ShortWrite { bytes }) => {
                let n = bytes.min(data.len());
                st.write(self.inode, &data[..n], pos).map_err(err)?;
                Err(err(os_err(libc::EIO)))
            }
            Some(kind) => Err(err(State::plain_fault(&kind))),
            None => st.write(self.inode, data, pos).map_err(err),
        }
    }
}

impl Drop for SimFile {
    fn drop(&mut self) {
        let mut st = self.lock();
        if let Some(inode) = st.inodes.get_mut(&self.inode) {
            inode.handles -= 1;
        }
        st.collect(self.inode);
    }
}

impl StorageFile for SimFile {
    fn path(&self) -> &Path {
        &self.path
    }

    fn write_at(&self, buf: Bytes, pos: u64) -> IoResult<()> {
        let mut st = self.lock();
        self.write_bytes(&mut st, &buf, pos)
    }

    fn write_all_at(&self, bufs: &[Bytes], pos: u64, durable: bool) -> IoResult<()> {
        let mut st = self.lock();
        let data: Vec<u8> = bufs.iter().flat_map(|b| b.iter().copied()).collect();
        self.write_bytes(&mut st, &data, pos)?;
        if durable {
            st.sync(self.inode, &self.path)
                .map_err(|e| self.err(IoOp::SyncData, e))?;
        }
        Ok(())
    }

    fn read_at(&self, buf: &mut [u8], pos: u64) -> IoResult<usize> {
        let mut st = self.lock();
        st.check(IoOp::ReadAt, &self.path)
            .map_err(|e| self.err(IoOp::ReadAt, e))?;
        let live = &st.inode(self.inode).live;
        let start = usize::try_from(pos).unwrap_or(usize::MAX).min(live.len());
        let n = buf.len().min(live.len() - start);
        buf[..n].copy_from_slice(&live[start..start + n]);
        Ok(n)
    }

    fn sync_data(&self) -> IoResult<()> {
        let mut st = self.lock();
        st.sync(self.inode, &self.path)
            .map_err(|e| self.err(IoOp::SyncData, e))
    }

    fn set_len(&self, len: u64) -> IoResult<()> {
        self.check_writable(IoOp::SetLen, libc::EINVAL)?;
        let mut st = self.lock();
        st.check(IoOp::SetLen, &self.path)
            .map_err(|e| self.err(IoOp::SetLen, e))?;
        if len > SIM_FILE_BYTES_MAX {
            return Err(self.err(IoOp::SetLen, os_err(libc::EFBIG)));
        }
        st.inode(self.inode).live.resize(len as usize, 0);
        Ok(())
    }

    fn len(&self) -> IoResult<u64> {
        let mut st = self.lock();
        st.check(IoOp::Len, &self.path)
            .map_err(|e| self.err(IoOp::Len, e))?;
        Ok(st.inode(self.inode).live.len() as u64)
    }

    fn raw_fd(&self) -> Option<RawFd> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> PathBuf {
        PathBuf::from(s)
    }

    fn setup() -> SimStorage {
        let sim = SimStorage::new();
        sim.create_dir_all(&p("/d")).unwrap();
        sim
    }

    #[test]
    fn writing_past_the_end_zero_fills_the_gap() {
        let sim = setup();
        let f = sim.open(&p("/d/f"), OpenMode::CreateNew).unwrap();
        f.write_at(Bytes::from_static(b"xy"), 3).unwrap();
        assert_eq!(sim.file_bytes(&p("/d/f")).unwrap(), b"\0\0\0xy");
    }

    #[test]
    fn a_fault_skips_the_requested_number_of_matching_operations_then_fires_once() {
        let sim = setup();
        let f = sim.open(&p("/d/f"), OpenMode::CreateNew).unwrap();
        let g = sim.open(&p("/d/g"), OpenMode::CreateNew).unwrap();
        sim.inject(
            Fault::new(IoOp::WriteAt, FaultKind::Eio)
                .on_path("/d/f")
                .after(2),
        );
        let b = || Bytes::from_static(b"a");
        g.write_at(b(), 0).unwrap(); // other path: not counted
        f.write_at(b(), 0).unwrap();
        f.write_at(b(), 1).unwrap();
        assert!(f.write_at(b(), 2).is_err());
        assert_eq!(sim.pending_faults(), 0);
        f.write_at(b(), 2).unwrap();
        assert_eq!(sim.file_bytes(&p("/d/f")).unwrap(), b"aaa");
    }

    #[test]
    #[should_panic(expected = "ShortWrite is a write fault")]
    fn a_short_write_fault_on_a_sync_is_a_programmer_error() {
        SimStorage::new().inject(Fault::new(
            IoOp::SyncData,
            FaultKind::ShortWrite { bytes: 1 },
        ));
    }

    #[test]
    fn a_removed_file_is_freed_once_its_last_handle_closes_and_its_name_is_durably_gone() {
        let sim = setup();
        let f = sim.open(&p("/d/f"), OpenMode::CreateNew).unwrap();
        sim.sync_dir(&p("/d")).unwrap();
        sim.remove(&p("/d/f")).unwrap();
        assert_eq!(sim.inode_count(), 1);
        drop(f);
        assert_eq!(sim.inode_count(), 1, "still named in the durable view");
        sim.sync_dir(&p("/d")).unwrap();
        assert_eq!(sim.inode_count(), 0);
    }

    #[test]
    fn renaming_a_directory_moves_its_files_in_both_views() {
        let sim = setup();
        sim.create_dir_all(&p("/d/t-0")).unwrap();
        let f = sim.open(&p("/d/t-0/a.log"), OpenMode::CreateNew).unwrap();
        f.write_all_at(&[Bytes::from_static(b"abc")], 0, true)
            .unwrap();
        sim.sync_dir(&p("/d/t-0")).unwrap();
        sim.rename(&p("/d/t-0"), &p("/d/t-0.deleted")).unwrap();
        assert!(!sim.exists(&p("/d/t-0")));
        assert_eq!(
            sim.list_dir(&p("/d/t-0.deleted")).unwrap(),
            vec![p("/d/t-0.deleted/a.log")]
        );
        let after = sim.crash(TornTail::None);
        assert_eq!(
            after.file_bytes(&p("/d/t-0.deleted/a.log")).unwrap(),
            b"abc"
        );
    }

    #[test]
    fn clones_share_the_file_system_and_a_crash_does_not() {
        let sim = setup();
        let clone = sim.clone();
        clone.open(&p("/d/f"), OpenMode::CreateNew).unwrap();
        assert!(sim.exists(&p("/d/f")));
        let crashed = sim.crash(TornTail::None);
        crashed.create_dir_all(&p("/e")).unwrap();
        assert!(!sim.exists(&p("/e")));
    }

    #[test]
    fn a_halted_storage_refuses_syncs_but_keeps_accepting_writes() {
        let sim = setup();
        let f = sim.open(&p("/d/f"), OpenMode::CreateNew).unwrap();
        sim.halt_after_syncs(1);
        f.write_all_at(&[Bytes::from_static(b"ab")], 0, true)
            .unwrap();
        f.write_at(Bytes::from_static(b"cd"), 2).unwrap();
        assert_eq!(
            f.sync_data().unwrap_err().source.raw_os_error(),
            Some(libc::EIO)
        );
        assert!(sim.sync_dir(&p("/d")).is_err());
        assert_eq!(sim.file_bytes(&p("/d/f")).unwrap(), b"abcd");
        assert_eq!(sim.durable_bytes(&p("/d/f")).unwrap(), b"ab");
        assert_eq!(sim.syncs_completed(), 1);
    }
}
