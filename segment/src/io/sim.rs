//! The simulated backend: an in-memory file system with a live-vs-durable model, fault
//! injection and crashes.
//!
//! # Model
//!
//! The model is Linux's (ext4's) contract for an application that wants its data back after a
//! power cut, taken strictly: nothing the kernel may keep in memory is assumed to reach the disk.
//!
//! - **Files** are inodes holding two byte vectors: `live` (what reads see: the page cache) and
//!   `durable` (what a crash keeps: the disk). Writes and `set_len` change `live`;
//!   [`StorageFile::sync_data`] (or a durable `write_all_at`) copies `live` to `durable`, length
//!   included. Writing past the end zero-fills the gap, like a sparse file. Syncing a file never
//!   makes its *name* durable.
//! - **Directories** are inodes too, each holding two entry tables, name → file or directory:
//!   the live table (what `open`, `exists`, `list_dir` see) and the durable table. Every name
//!   operation — creating a file ([`OpenMode::CreateOrOpen`], [`OpenMode::CreateNew`]), removing
//!   one, renaming a file or a directory, and each directory [`Storage::create_dir_all`] makes —
//!   changes the live table of the directory holding the name at once, and reaches its durable
//!   table only at [`Storage::sync_dir`] of that directory: `sync_dir(d)` makes `d`'s durable
//!   table equal to its live one (names directly in `d`, not below). So after a crash:
//!   - a file created in a directory never synced since is gone, with its data, even if that data
//!     was synced;
//!   - an unsynced rename reverts to the old name; a rename across directories becomes durable
//!     half by half, each side at its own directory's sync (after a sync of only the target's
//!     directory the file or directory is there under both names, after a sync of only the
//!     source's under neither);
//!   - an unsynced removal comes back;
//!   - a directory `create_dir_all` made is there only if its parent was synced since (so a new
//!     directory needs its parent synced, each level for a new chain of directories), and what is
//!     inside a directory is reachable only through the durable entries leading to it from the
//!     root (the root directory itself always exists).
//!
//!   ext4 in its default `data=ordered` mode often commits a name operation sooner (its journal
//!   commits every few seconds, and a rename over an existing file flushes the new file's data
//!   first); the model does not, so that code relying on it is caught.
//! - Open handles refer to inodes, so they follow renames and survive removal, as with POSIX
//!   file descriptors. A file inode no name (live or durable) and no handle refers to is freed.
//! - Files are capped at [`SIM_FILE_BYTES_MAX`]; writing or extending beyond fails with `EFBIG`.
//!
//! # Faults
//!
//! [`SimStorage::inject`] arms a [`Fault`]: the first operation of kind `op` whose path contains
//! `path_contains`, after skipping `after` such operations, fails; each fault fires once. A fault
//! is checked before the operation does anything, so apart from [`FaultKind::ShortWrite`] and
//! [`FaultKind::SyncFails`] a faulted operation has no effect (a faulted `sync_dir` leaves the
//! directory's durable entries as they were). `write_all_at` is one [`IoOp::WriteAt`] operation
//! (over the concatenation of its buffers), followed when durable by one [`IoOp::SyncData`]
//! operation. A failed sync of a file (faulted or not) fails every later sync through the same
//! handle without reaching the simulated disk, as on every backend (`io` module docs:
//! "Durability"); a handle opened afterwards syncs again.
//!
//! # Crashes
//!
//! [`SimStorage::crash`] returns a new, independent file system holding the durable view: the
//! directories and files reachable from the root through durable entries, each file with its
//! durable bytes, plus optionally a torn tail ([`TornTail`]). A directory durably reachable under
//! two names (a directory rename synced on the target's side only) is kept under the first name
//! in path order only. [`SimStorage::syncs_completed`] counts completed syncs (of files and
//! directories) and [`SimStorage::halt_after_syncs`] lets a test cut the power right after the
//! k-th one.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::ffi::{OsStr, OsString};
use std::io;
use std::os::fd::RawFd;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use bytes::Bytes;

use super::{IoError, IoOp, IoResult, OpenMode, Storage, StorageFile, SyncFailure};
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
    /// and a later successful sync will not bring the lost writes back. Like every failed sync
    /// (of any backend), it is sticky: later syncs through the same handle fail too.
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

/// A directory inode's number; the root is [`ROOT`].
type DirId = u64;

/// The root directory, which always exists (durably).
const ROOT: DirId = 0;

/// What a directory entry names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Entry {
    File(InodeId),
    Dir(DirId),
}

#[derive(Debug, Default)]
struct Inode {
    live: Vec<u8>,
    durable: Vec<u8>,
    handles: usize,
}

/// A directory's two entry tables (see the module docs).
#[derive(Debug, Default)]
struct Directory {
    live: BTreeMap<OsString, Entry>,
    durable: BTreeMap<OsString, Entry>,
}

#[derive(Debug)]
struct State {
    inodes: HashMap<InodeId, Inode>,
    next_inode: InodeId,
    dirs: HashMap<DirId, Directory>,
    next_dir: DirId,
    faults: Vec<Fault>,
    syncs_completed: u64,
    halt_after_syncs: Option<u64>,
}

impl Default for State {
    fn default() -> Self {
        State {
            inodes: HashMap::new(),
            next_inode: 0,
            dirs: HashMap::from([(ROOT, Directory::default())]),
            next_dir: ROOT + 1,
            faults: vec![],
            syncs_completed: 0,
            halt_after_syncs: None,
        }
    }
}

fn os_err(errno: i32) -> io::Error {
    io::Error::from_raw_os_error(errno)
}

/// The names along `p` from the root (`/`, `.` and prefixes dropped: every path is taken as
/// relative to the one root; `..` is not supported).
fn names(p: &Path) -> Vec<&OsStr> {
    p.components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n),
            _ => None,
        })
        .collect()
}

impl State {
    fn dir(&self, d: DirId) -> &Directory {
        self.dirs
            .get(&d)
            .expect("entries name existing directories")
    }

    fn dir_mut(&mut self, d: DirId) -> &mut Directory {
        self.dirs
            .get_mut(&d)
            .expect("entries name existing directories")
    }

    fn new_dir(&mut self) -> DirId {
        let id = self.next_dir;
        self.next_dir += 1;
        self.dirs.insert(id, Directory::default());
        id
    }

    fn new_inode(&mut self, inode: Inode) -> InodeId {
        let id = self.next_inode;
        self.next_inode += 1;
        self.inodes.insert(id, inode);
        id
    }

    /// What `p` names in the live view (the root for an empty path), or the errno of the lookup.
    fn resolve(&self, p: &Path) -> Result<Entry, i32> {
        let mut cur = Entry::Dir(ROOT);
        for n in names(p) {
            let Entry::Dir(d) = cur else {
                return Err(libc::ENOTDIR);
            };
            cur = *self.dir(d).live.get(n).ok_or(libc::ENOENT)?;
        }
        Ok(cur)
    }

    /// The live directory holding the name `p`, and that name; `EISDIR` for the root.
    fn parent(&self, p: &Path) -> Result<(DirId, OsString), i32> {
        let mut ns = names(p);
        let last = ns.pop().ok_or(libc::EISDIR)?;
        let mut cur = ROOT;
        for n in ns {
            match self.dir(cur).live.get(n) {
                Some(Entry::Dir(d)) => cur = *d,
                Some(Entry::File(_)) => return Err(libc::ENOTDIR),
                None => return Err(libc::ENOENT),
            }
        }
        Ok((cur, last.to_os_string()))
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

    /// Frees file `id` once no name (live or durable) and no handle refers to it.
    fn collect(&mut self, id: InodeId) {
        let named = |t: &BTreeMap<OsString, Entry>| t.values().any(|&e| e == Entry::File(id));
        let referenced = self.inodes.get(&id).is_some_and(|i| i.handles > 0)
            || self
                .dirs
                .values()
                .any(|d| named(&d.live) || named(&d.durable));
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

    /// The file system a crash leaves: what is durably reachable from the root (see the module
    /// docs), each file with its durable bytes plus the torn tail `torn` asks for.
    fn crashed(&self, torn: &TornTail) -> State {
        let mut next = State::default();
        // A file durably named twice (a rename durable on one side only) stays one inode.
        let mut files: HashMap<InodeId, InodeId> = HashMap::new();
        let mut dirs: HashMap<DirId, DirId> = HashMap::from([(ROOT, ROOT)]);
        let mut queue = VecDeque::from([(ROOT, PathBuf::from("/"))]);
        while let Some((old_dir, path)) = queue.pop_front() {
            let new_dir = dirs[&old_dir];
            for (name, entry) in &self.dir(old_dir).durable {
                let path = path.join(name);
                let kept = match *entry {
                    Entry::Dir(d) => {
                        if dirs.contains_key(&d) {
                            continue; // already kept under another name
                        }
                        let nd = next.new_dir();
                        dirs.insert(d, nd);
                        queue.push_back((d, path));
                        Entry::Dir(nd)
                    }
                    Entry::File(f) => {
                        let id = match files.get(&f) {
                            Some(&id) => id,
                            None => {
                                let id = next.new_inode(self.crashed_file(f, &path, torn));
                                files.insert(f, id);
                                id
                            }
                        };
                        Entry::File(id)
                    }
                };
                let d = next.dir_mut(new_dir);
                d.live.insert(name.clone(), kept);
                d.durable.insert(name.clone(), kept);
            }
        }
        next
    }

    /// What a crash leaves of file `id`, found at `path`.
    fn crashed_file(&self, id: InodeId, path: &Path, torn: &TornTail) -> Inode {
        let inode = &self.inodes[&id];
        let mut bytes = inode.durable.clone();
        if let TornTail::KeepUnsynced {
            file_contains,
            bytes: keep,
        } = torn
            && path.to_string_lossy().contains(file_contains.as_str())
            && inode.live.len() > bytes.len()
        {
            let end = inode.live.len().min(bytes.len() + keep);
            bytes.extend_from_slice(&inode.live[inode.durable.len()..end]);
        }
        Inode {
            live: bytes.clone(),
            durable: bytes,
            handles: 0,
        }
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
    /// nothing, while writes and name operations keep landing in the live view (so a
    /// [`TornTail`] can keep some bytes).
    /// A test runs its workload until it fails, then [`SimStorage::crash`]es.
    pub fn halt_after_syncs(&self, k: u64) {
        self.lock().halt_after_syncs = Some(k);
    }

    /// The live bytes of the file named `path` (what a read sees), if it exists.
    pub fn file_bytes(&self, path: &Path) -> Option<Vec<u8>> {
        let st = self.lock();
        match st.resolve(path) {
            Ok(Entry::File(id)) => Some(st.inodes[&id].live.clone()),
            _ => None,
        }
    }

    /// The durable bytes of the file named `path` in the live view, if it exists (whether the
    /// name itself is durable is another matter: see [`SimStorage::crash`]).
    pub fn durable_bytes(&self, path: &Path) -> Option<Vec<u8>> {
        let st = self.lock();
        match st.resolve(path) {
            Ok(Entry::File(id)) => Some(st.inodes[&id].durable.clone()),
            _ => None,
        }
    }

    /// How many file inodes are held (files named live or durably, or still open).
    pub fn inode_count(&self) -> usize {
        self.lock().inodes.len()
    }

    /// The file system a crash leaves: the directories and files reachable from the root
    /// through durable entries, each file with its durable bytes and the torn tail `torn` asks
    /// for. Faults, handles and counters are not kept.
    pub fn crash(&self, torn: TornTail) -> SimStorage {
        let next = self.lock().crashed(&torn);
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
        let err = |e| IoError::new(op, path, os_err(e));
        let mut st = self.lock();
        st.check(op, path).map_err(|e| IoError::new(op, path, e))?;
        let (dir, name) = st.parent(path).map_err(err)?;
        let id = match (st.dir(dir).live.get(&name).copied(), mode) {
            (Some(Entry::Dir(_)), _) => return Err(err(libc::EISDIR)),
            (Some(Entry::File(_)), OpenMode::CreateNew) => return Err(err(libc::EEXIST)),
            (Some(Entry::File(id)), _) => id,
            (None, OpenMode::Read | OpenMode::ReadWrite) => return Err(err(libc::ENOENT)),
            (None, OpenMode::CreateOrOpen | OpenMode::CreateNew) => {
                let id = st.new_inode(Inode::default());
                st.dir_mut(dir).live.insert(name, Entry::File(id));
                id
            }
        };
        st.inode(id).handles += 1;
        Ok(Arc::new(SimFile {
            state: Arc::clone(&self.state),
            inode: id,
            path: path.to_path_buf(),
            writable: mode.is_writable(),
            sync_failure: SyncFailure::default(),
        }))
    }

    fn rename(&self, from: &Path, to: &Path) -> IoResult<()> {
        let err = |e| IoError::new(IoOp::Rename, from, os_err(e));
        let mut st = self.lock();
        st.check(IoOp::Rename, from)
            .map_err(|e| IoError::new(IoOp::Rename, from, e))?;
        let (from_dir, from_name) = st.parent(from).map_err(err)?;
        let entry = *st
            .dir(from_dir)
            .live
            .get(&from_name)
            .ok_or(libc::ENOENT)
            .map_err(err)?;
        let (to_dir, to_name) = st.parent(to).map_err(err)?;
        if (from_dir, &from_name) == (to_dir, &to_name) {
            return Ok(());
        }
        match (entry, st.dir(to_dir).live.get(&to_name).copied()) {
            (Entry::File(_), Some(Entry::Dir(_))) => return Err(err(libc::EISDIR)),
            (Entry::Dir(_), Some(Entry::File(_))) => return Err(err(libc::ENOTDIR)),
            (Entry::Dir(_), Some(Entry::Dir(t))) if !st.dir(t).live.is_empty() => {
                return Err(err(libc::ENOTEMPTY));
            }
            _ => {}
        }
        if matches!(entry, Entry::Dir(_)) && names(to).starts_with(&names(from)) {
            return Err(err(libc::EINVAL));
        }
        st.dir_mut(from_dir).live.remove(&from_name);
        if let Some(Entry::File(replaced)) = st.dir_mut(to_dir).live.insert(to_name, entry) {
            st.collect(replaced);
        }
        Ok(())
    }

    fn remove(&self, path: &Path) -> IoResult<()> {
        let err = |e| IoError::new(IoOp::Remove, path, os_err(e));
        let mut st = self.lock();
        st.check(IoOp::Remove, path)
            .map_err(|e| IoError::new(IoOp::Remove, path, e))?;
        let (dir, name) = st.parent(path).map_err(err)?;
        match st.dir(dir).live.get(&name).copied() {
            None => Err(err(libc::ENOENT)),
            Some(Entry::Dir(_)) => Err(err(libc::EISDIR)),
            Some(Entry::File(id)) => {
                st.dir_mut(dir).live.remove(&name);
                st.collect(id);
                Ok(())
            }
        }
    }

    fn exists(&self, path: &Path) -> bool {
        self.lock().resolve(path).is_ok()
    }

    fn sync_dir(&self, dir: &Path) -> IoResult<()> {
        let err = |e| IoError::new(IoOp::SyncDir, dir, os_err(e));
        let mut st = self.lock();
        st.check(IoOp::SyncDir, dir)
            .map_err(|e| IoError::new(IoOp::SyncDir, dir, e))?;
        let d = match st.resolve(dir).map_err(err)? {
            Entry::Dir(d) => d,
            Entry::File(_) => return Err(err(libc::ENOTDIR)),
        };
        if st.halted() {
            return Err(err(libc::EIO));
        }
        let directory = st.dir_mut(d);
        let synced = directory.live.clone();
        let dropped = std::mem::replace(&mut directory.durable, synced);
        for entry in dropped.into_values() {
            if let Entry::File(id) = entry {
                st.collect(id);
            }
        }
        st.syncs_completed += 1;
        Ok(())
    }

    fn list_dir(&self, dir: &Path) -> IoResult<Vec<PathBuf>> {
        let err = |e| IoError::new(IoOp::ListDir, dir, os_err(e));
        let mut st = self.lock();
        st.check(IoOp::ListDir, dir)
            .map_err(|e| IoError::new(IoOp::ListDir, dir, e))?;
        match st.resolve(dir).map_err(err)? {
            Entry::File(_) => Err(err(libc::ENOTDIR)),
            Entry::Dir(d) => Ok(st.dir(d).live.keys().map(|n| dir.join(n)).collect()),
        }
    }

    fn create_dir_all(&self, dir: &Path) -> IoResult<()> {
        let err = |e| IoError::new(IoOp::CreateDir, dir, os_err(e));
        let mut st = self.lock();
        st.check(IoOp::CreateDir, dir)
            .map_err(|e| IoError::new(IoOp::CreateDir, dir, e))?;
        // Checked first, so that a failure creates nothing.
        let mut path = PathBuf::new();
        for n in names(dir) {
            path.push(n);
            match st.resolve(&path) {
                Ok(Entry::File(_)) => return Err(err(libc::EEXIST)),
                Ok(Entry::Dir(_)) => {}
                Err(_) => break,
            }
        }
        let mut cur = ROOT;
        for n in names(dir) {
            cur = match st.dir(cur).live.get(n).copied() {
                Some(Entry::Dir(d)) => d,
                Some(Entry::File(_)) => return Err(err(libc::EEXIST)),
                None => {
                    let d = st.new_dir();
                    st.dir_mut(cur).live.insert(n.to_os_string(), Entry::Dir(d));
                    d
                }
            };
        }
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
    /// The handle's first failed sync, returned by every later one (module docs of `io`).
    sync_failure: SyncFailure,
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
        let data: Vec<u8> = bufs.iter().flat_map(|b| b.iter().copied()).collect();
        let write = |durable: bool| {
            let mut st = self.lock();
            self.write_bytes(&mut st, &data, pos)?;
            if durable {
                st.sync(self.inode, &self.path)
                    .map_err(|e| self.err(IoOp::SyncData, e))?;
            }
            Ok(())
        };
        if durable {
            self.sync_failure.durable_write(write)
        } else {
            write(false)
        }
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
        self.sync_failure.run(|| {
            self.lock()
                .sync(self.inode, &self.path)
                .map_err(|e| self.err(IoOp::SyncData, e))
        })
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

    /// A file system with the directory `/d`, durably.
    fn setup() -> SimStorage {
        let sim = SimStorage::new();
        sim.create_dir_all(&p("/d")).unwrap();
        sim.sync_dir(&p("/")).unwrap();
        sim
    }

    /// `path`'s durable bytes as a crash leaves them, if its name survives.
    fn after_crash(sim: &SimStorage, path: &str) -> Option<Vec<u8>> {
        sim.crash(TornTail::None).file_bytes(&p(path))
    }

    fn synced_file(sim: &SimStorage, path: &str, bytes: &'static [u8]) -> Arc<dyn StorageFile> {
        let f = sim.open(&p(path), OpenMode::CreateNew).unwrap();
        f.write_all_at(&[Bytes::from_static(bytes)], 0, true)
            .unwrap();
        f
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
    fn renaming_a_directory_moves_its_files_once_the_parent_is_synced() {
        let sim = setup();
        sim.create_dir_all(&p("/d/t-0")).unwrap();
        let f = sim.open(&p("/d/t-0/a.log"), OpenMode::CreateNew).unwrap();
        f.write_all_at(&[Bytes::from_static(b"abc")], 0, true)
            .unwrap();
        sim.sync_dir(&p("/d/t-0")).unwrap();
        sim.rename(&p("/d/t-0"), &p("/d/t-0.deleted")).unwrap();
        sim.sync_dir(&p("/d")).unwrap();
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
        let before = sim.syncs_completed();
        sim.halt_after_syncs(before + 1);
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
        assert_eq!(sim.syncs_completed(), before + 1);
    }

    #[test]
    fn a_created_file_survives_a_crash_only_once_its_directory_is_synced() {
        let sim = setup();
        let _f = synced_file(&sim, "/d/f", b"abc");
        assert_eq!(after_crash(&sim, "/d/f"), None, "data synced, name not");
        sim.sync_dir(&p("/d")).unwrap();
        assert_eq!(after_crash(&sim, "/d/f").unwrap(), b"abc");
    }

    #[test]
    fn an_unsynced_rename_reverts_to_the_old_name_and_an_unsynced_removal_comes_back() {
        let sim = setup();
        let _f = synced_file(&sim, "/d/a.cleaned", b"new");
        let _g = synced_file(&sim, "/d/b", b"b");
        sim.sync_dir(&p("/d")).unwrap();
        sim.rename(&p("/d/a.cleaned"), &p("/d/a.swap")).unwrap();
        sim.remove(&p("/d/b")).unwrap();
        let crashed = sim.crash(TornTail::None);
        assert_eq!(crashed.file_bytes(&p("/d/a.cleaned")).unwrap(), b"new");
        assert!(!crashed.exists(&p("/d/a.swap")));
        assert_eq!(crashed.file_bytes(&p("/d/b")).unwrap(), b"b");
        sim.sync_dir(&p("/d")).unwrap();
        let crashed = sim.crash(TornTail::None);
        assert_eq!(
            crashed.list_dir(&p("/d")).unwrap(),
            vec![p("/d/a.swap")],
            "both durable once /d is synced"
        );
    }

    #[test]
    fn a_rename_over_an_existing_file_keeps_the_old_file_until_the_directory_is_synced() {
        let sim = setup();
        let _old = synced_file(&sim, "/d/topic.config", b"old");
        sim.sync_dir(&p("/d")).unwrap();
        let _new = synced_file(&sim, "/d/topic.config.tmp", b"new");
        sim.rename(&p("/d/topic.config.tmp"), &p("/d/topic.config"))
            .unwrap();
        assert_eq!(sim.file_bytes(&p("/d/topic.config")).unwrap(), b"new");
        assert_eq!(after_crash(&sim, "/d/topic.config").unwrap(), b"old");
        sim.sync_dir(&p("/d")).unwrap();
        assert_eq!(after_crash(&sim, "/d/topic.config").unwrap(), b"new");
    }

    #[test]
    fn a_rename_across_directories_becomes_durable_side_by_side() {
        let sim = setup();
        sim.create_dir_all(&p("/e")).unwrap();
        sim.sync_dir(&p("/")).unwrap();
        let _f = synced_file(&sim, "/d/f", b"x");
        sim.sync_dir(&p("/d")).unwrap();
        sim.rename(&p("/d/f"), &p("/e/f")).unwrap();
        sim.sync_dir(&p("/e")).unwrap();
        let crashed = sim.crash(TornTail::None);
        assert!(crashed.exists(&p("/d/f")) && crashed.exists(&p("/e/f")));
        sim.sync_dir(&p("/d")).unwrap();
        let crashed = sim.crash(TornTail::None);
        assert!(!crashed.exists(&p("/d/f")) && crashed.exists(&p("/e/f")));
    }

    #[test]
    fn a_created_directory_and_everything_in_it_vanish_unless_its_parent_is_synced() {
        let sim = setup();
        sim.create_dir_all(&p("/d/t-0/sub")).unwrap();
        let _f = synced_file(&sim, "/d/t-0/a.log", b"abc");
        sim.sync_dir(&p("/d/t-0")).unwrap();
        let crashed = sim.crash(TornTail::None);
        assert!(!crashed.exists(&p("/d/t-0")), "/d was not synced");
        assert_eq!(crashed.list_dir(&p("/d")).unwrap(), Vec::<PathBuf>::new());
        sim.sync_dir(&p("/d")).unwrap();
        let crashed = sim.crash(TornTail::None);
        assert_eq!(crashed.file_bytes(&p("/d/t-0/a.log")).unwrap(), b"abc");
        assert!(crashed.exists(&p("/d/t-0/sub")));
    }

    #[test]
    fn a_chain_of_new_directories_needs_every_parent_synced() {
        let sim = SimStorage::new();
        sim.create_dir_all(&p("/a/b")).unwrap();
        sim.sync_dir(&p("/a")).unwrap();
        assert!(!sim.crash(TornTail::None).exists(&p("/a")));
        sim.sync_dir(&p("/")).unwrap();
        assert!(sim.crash(TornTail::None).exists(&p("/a/b")));
    }

    #[test]
    fn an_unsynced_directory_rename_reverts_with_what_was_synced_inside_it_since() {
        let sim = setup();
        sim.create_dir_all(&p("/d/t-0")).unwrap();
        sim.sync_dir(&p("/d")).unwrap();
        sim.rename(&p("/d/t-0"), &p("/d/t-0.x-delete")).unwrap();
        let _f = synced_file(&sim, "/d/t-0.x-delete/late.log", b"late");
        sim.sync_dir(&p("/d/t-0.x-delete")).unwrap();
        let crashed = sim.crash(TornTail::None);
        assert!(!crashed.exists(&p("/d/t-0.x-delete")));
        assert_eq!(
            crashed.file_bytes(&p("/d/t-0/late.log")).unwrap(),
            b"late",
            "the same directory, under its durable name"
        );
    }

    #[test]
    fn a_faulted_directory_sync_makes_nothing_durable() {
        let sim = setup();
        let _f = synced_file(&sim, "/d/f", b"x");
        sim.inject(Fault::new(IoOp::SyncDir, FaultKind::Eio).on_path("/d"));
        assert!(sim.sync_dir(&p("/d")).is_err());
        assert_eq!(after_crash(&sim, "/d/f"), None);
        sim.sync_dir(&p("/d")).unwrap();
        assert_eq!(after_crash(&sim, "/d/f").unwrap(), b"x");
    }

    #[test]
    fn a_directory_rename_into_itself_or_onto_a_non_empty_directory_is_refused() {
        let sim = setup();
        sim.create_dir_all(&p("/d/a")).unwrap();
        sim.create_dir_all(&p("/d/b")).unwrap();
        let _f = synced_file(&sim, "/d/b/f", b"x");
        let errno = |r: IoResult<()>| r.unwrap_err().source.raw_os_error();
        assert_eq!(
            errno(sim.rename(&p("/d/a"), &p("/d/a/c"))),
            Some(libc::EINVAL)
        );
        assert_eq!(
            errno(sim.rename(&p("/d/a"), &p("/d/b"))),
            Some(libc::ENOTEMPTY)
        );
        assert_eq!(
            errno(sim.rename(&p("/d/b/f"), &p("/d/a"))),
            Some(libc::EISDIR)
        );
        sim.rename(&p("/d/b"), &p("/d/a")).unwrap();
        assert_eq!(sim.list_dir(&p("/d/a")).unwrap(), vec![p("/d/a/f")]);
    }
}
