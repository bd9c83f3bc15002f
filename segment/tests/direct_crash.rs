//! Scenario: crashes of a segment written in direct-I/O mode, on real files. The `.log` is
//! preallocated, so a crash leaves it ending in zeros. A crash image keeps every byte a
//! completed sync made durable, then any prefix of what was written after it, then the
//! preallocated zeros. Recovery of every such image must keep a prefix of what was appended that
//! holds every acknowledged batch, end cleanly (no problem reported) where the zeros start, cut
//! a torn batch as a torn batch, and leave a file of exactly the recovered length, appendable.

mod common;

use bytes::Bytes;
use common::batches;
use mirrorlog_index::Offset;
use mirrorlog_segment::io::{
    DirectConfig, DirectDurability, DirectStorage, PwriteStorage, Storage,
};
use mirrorlog_segment::segment::{ActiveSegment, LOG_SUFFIX, SegmentConfig, segment_path};
use std::path::Path;
use std::sync::Arc;

const PREALLOCATE: u64 = 256 << 10;

fn direct(durability: DirectDurability) -> Arc<dyn Storage> {
    let config = DirectConfig {
        durability,
        preallocate_bytes: PREALLOCATE,
        chunk_bytes: 16 << 10,
        ..DirectConfig::default()
    };
    Arc::new(DirectStorage::new(Arc::new(PwriteStorage::new()), config).unwrap())
}

fn config() -> SegmentConfig {
    SegmentConfig {
        index_interval_bytes: 300,
        index_bytes_max: 8 * 1024,
        ..SegmentConfig::default()
    }
}

/// Recovers the image `bytes` (the `.log` alone, no indexes) in a fresh directory with `storage`;
/// returns the report, the recovered file and the directory (kept alive).
fn recover_image(
    storage: &Arc<dyn Storage>,
    bytes: &[u8],
) -> (
    mirrorlog_segment::segment::RecoveryReport,
    Vec<u8>,
    tempfile::TempDir,
) {
    let dir = tempfile::tempdir().unwrap();
    let log = segment_path(dir.path(), Offset(0), LOG_SUFFIX);
    std::fs::write(&log, bytes).unwrap();
    let mut seg =
        ActiveSegment::open_for_recovery(storage.clone(), dir.path(), Offset(0), config(), 0)
            .unwrap();
    let report = seg.recover(|_, _| Ok(())).unwrap();
    drop(seg);
    let file = std::fs::read(&log).unwrap();
    (report, file, dir)
}

fn concat(bs: &[Bytes]) -> Vec<u8> {
    bs.iter().flat_map(|b| b.iter().copied()).collect()
}

/// The on-disk bytes of the segment in `dir` as they are now (preallocated zeros included).
fn on_disk(dir: &Path) -> Vec<u8> {
    std::fs::read(segment_path(dir, Offset(0), LOG_SUFFIX)).unwrap()
}

/// `MIRRORLOG_SKIP_IO_URING_TESTS=1` skips the tests that need io_uring on a machine that
/// forbids it (as `segment/tests/io_backends.rs` does).
fn skip_uring() -> bool {
    std::env::var_os("MIRRORLOG_SKIP_IO_URING_TESTS").is_some_and(|v| v == "1")
}

#[test]
fn every_crash_image_recovers_to_a_prefix_holding_every_acknowledged_batch() {
    if skip_uring() {
        return;
    }
    for durability in [DirectDurability::Dsync, DirectDurability::Fdatasync] {
        let storage = direct(durability);
        let dir = tempfile::tempdir().unwrap();
        let bs = batches(0, 30, 5, 700, 1_000);
        let mut seg =
            ActiveSegment::create(storage.clone(), dir.path(), Offset(0), config(), 0).unwrap();
        // 20 acknowledged (durable) batches, then 10 written but never synced.
        for b in &bs[..20] {
            seg.append_durable(b.clone()).unwrap();
        }
        let acked_bytes = concat(&bs[..20]).len();
        for b in &bs[20..] {
            seg.append(b.clone()).unwrap();
        }
        // Let the unsynced writes land, so the image below can hold any prefix of them.
        seg.flush().unwrap();
        let image = on_disk(dir.path());
        let all = concat(&bs);
        assert_eq!(image.len() as u64, PREALLOCATE, "preallocated while open");
        assert_eq!(&image[..all.len()], &all[..]);
        assert!(image[all.len()..].iter().all(|&b| b == 0));

        // Crash images: the durable bytes, any prefix of the rest, zeros after.
        let mut cuts: Vec<usize> = (acked_bytes..=all.len()).step_by(997).collect();
        let mut at = 0;
        for b in &bs {
            at += b.len();
            if at >= acked_bytes {
                cuts.push(at);
            }
        }
        for cut in cuts {
            let mut crashed = image.clone();
            crashed[cut..].fill(0);
            let (report, file, _keep) = recover_image(&storage, &crashed);
            // Whole batches up to the cut survive; the acknowledged ones always.
            let whole = bs
                .iter()
                .scan(0usize, |end, b| {
                    *end += b.len();
                    Some(*end)
                })
                .filter(|&end| end <= cut)
                .count();
            assert!(whole >= 20, "{durability:?} cut {cut}");
            assert_eq!(report.batches, whole as u64, "{durability:?} cut {cut}");
            let kept = concat(&bs[..whole]);
            assert_eq!(
                file, kept,
                "{durability:?} cut {cut}: file is exactly the log"
            );
            assert_eq!(report.valid_bytes, kept.len() as u64);
            if cut == kept.len() {
                // The log ends where the zeros start: a clean end.
                assert_eq!(report.stopped_by, None, "{durability:?} cut {cut}");
                assert_eq!(report.zero_tail_bytes, report.truncated_bytes);
            } else {
                // A torn batch, then zeros: reported as torn, not as a clean end.
                assert!(report.stopped_by.is_some(), "{durability:?} cut {cut}");
                assert_eq!(report.zero_tail_bytes, 0);
            }
        }
        drop(seg);
        // Closing trims the preallocated zeros: the file is exactly Kafka's `.log`.
        assert_eq!(on_disk(dir.path()), all, "{durability:?}");
    }
}

#[test]
fn a_recovered_direct_segment_takes_appends_and_closes_exact() {
    if skip_uring() {
        return;
    }
    let storage = direct(DirectDurability::Dsync);
    let bs = batches(0, 12, 4, 900, 5_000);
    let first = concat(&bs[..8]);
    let mut image = first.clone();
    image.resize(PREALLOCATE as usize, 0);
    let dir = tempfile::tempdir().unwrap();
    let log = segment_path(dir.path(), Offset(0), LOG_SUFFIX);
    std::fs::write(&log, &image).unwrap();
    let mut seg =
        ActiveSegment::open_for_recovery(storage.clone(), dir.path(), Offset(0), config(), 0)
            .unwrap();
    let report = seg.recover(|_, _| Ok(())).unwrap();
    assert_eq!(report.batches, 8);
    assert_eq!(report.stopped_by, None);
    assert_eq!(report.zero_tail_bytes, PREALLOCATE - first.len() as u64);
    for b in &bs[8..] {
        seg.append_durable(b.clone()).unwrap();
    }
    let sealed = seg.seal().unwrap();
    assert_eq!(std::fs::read(&log).unwrap(), concat(&bs), "sealing trims");
    assert_eq!(sealed.next_offset(), Offset(48));
}

#[test]
fn buffered_recovery_also_ends_cleanly_at_a_zero_tail() {
    // A direct-mode crash image opened by a buffered broker (the mode is a setting, the files are
    // the same): the zeros are a clean end there too.
    let bs = batches(0, 5, 3, 500, 7);
    let mut image = concat(&bs);
    let len = image.len();
    image.resize(len + 10_000, 0);
    let storage: Arc<dyn Storage> = Arc::new(PwriteStorage::new());
    let (report, file, _keep) = recover_image(&storage, &image);
    assert_eq!(report.batches, 5);
    assert_eq!(report.stopped_by, None);
    assert_eq!(report.zero_tail_bytes, 10_000);
    assert_eq!(file.len(), len);
}

/// A buffered backend that counts the bytes read through it.
#[derive(Debug)]
struct CountingStorage {
    inner: PwriteStorage,
    read: Arc<std::sync::atomic::AtomicU64>,
}

#[derive(Debug)]
struct CountingFile {
    inner: Arc<dyn mirrorlog_segment::io::StorageFile>,
    read: Arc<std::sync::atomic::AtomicU64>,
}

impl Storage for CountingStorage {
    fn name(&self) -> &'static str {
        "counting"
    }
    fn open(
        &self,
        path: &Path,
        mode: mirrorlog_segment::io::OpenMode,
    ) -> mirrorlog_segment::io::IoResult<Arc<dyn mirrorlog_segment::io::StorageFile>> {
        Ok(Arc::new(CountingFile {
            inner: self.inner.open(path, mode)?,
            read: Arc::clone(&self.read),
        }))
    }
    fn rename(&self, from: &Path, to: &Path) -> mirrorlog_segment::io::IoResult<()> {
        self.inner.rename(from, to)
    }
    fn remove(&self, path: &Path) -> mirrorlog_segment::io::IoResult<()> {
        self.inner.remove(path)
    }
    fn exists(&self, path: &Path) -> bool {
        self.inner.exists(path)
    }
    fn sync_dir(&self, dir: &Path) -> mirrorlog_segment::io::IoResult<()> {
        self.inner.sync_dir(dir)
    }
    fn list_dir(&self, dir: &Path) -> mirrorlog_segment::io::IoResult<Vec<std::path::PathBuf>> {
        self.inner.list_dir(dir)
    }
    fn create_dir_all(&self, dir: &Path) -> mirrorlog_segment::io::IoResult<()> {
        self.inner.create_dir_all(dir)
    }
}

impl mirrorlog_segment::io::StorageFile for CountingFile {
    fn path(&self) -> &Path {
        self.inner.path()
    }
    fn write_at(&self, buf: Bytes, pos: u64) -> mirrorlog_segment::io::IoResult<()> {
        self.inner.write_at(buf, pos)
    }
    fn write_all_at(
        &self,
        bufs: &[Bytes],
        pos: u64,
        durable: bool,
    ) -> mirrorlog_segment::io::IoResult<()> {
        self.inner.write_all_at(bufs, pos, durable)
    }
    fn read_at(&self, buf: &mut [u8], pos: u64) -> mirrorlog_segment::io::IoResult<usize> {
        let n = self.inner.read_at(buf, pos)?;
        self.read
            .fetch_add(n as u64, std::sync::atomic::Ordering::Relaxed);
        Ok(n)
    }
    fn sync_data(&self) -> mirrorlog_segment::io::IoResult<()> {
        self.inner.sync_data()
    }
    fn set_len(&self, len: u64) -> mirrorlog_segment::io::IoResult<()> {
        self.inner.set_len(len)
    }
    fn len(&self) -> mirrorlog_segment::io::IoResult<u64> {
        self.inner.len()
    }
    fn raw_fd(&self) -> Option<std::os::fd::RawFd> {
        self.inner.raw_fd()
    }
    fn data_range(&self, pos: u64) -> mirrorlog_segment::io::IoResult<Option<(u64, u64)>> {
        self.inner.data_range(pos)
    }
}

#[test]
fn recovery_skips_a_preallocated_tail_without_reading_it() {
    if skip_uring() {
        return;
    }
    // A direct-mode crash image: a few batches, then 64 MiB preallocated and never written.
    const TAIL: u64 = 64 << 20;
    let storage = direct(DirectDurability::Dsync);
    let dir = tempfile::tempdir().unwrap();
    let bs = batches(0, 6, 4, 800, 9);
    let mut seg =
        ActiveSegment::create(storage.clone(), dir.path(), Offset(0), config(), 0).unwrap();
    for b in &bs {
        seg.append_durable(b.clone()).unwrap();
    }
    let log = segment_path(dir.path(), Offset(0), LOG_SUFFIX);
    let crashed = tempfile::tempdir().unwrap();
    let image = segment_path(crashed.path(), Offset(0), LOG_SUFFIX);
    std::fs::copy(&log, &image).unwrap();
    drop(seg);
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(&image)
        .unwrap();
    // SAFETY: plain system call on a descriptor we own.
    let rc = unsafe { libc::fallocate(std::os::fd::AsRawFd::as_raw_fd(&f), 0, 0, TAIL as i64) };
    assert_eq!(rc, 0, "{}", std::io::Error::last_os_error());
    drop(f);
    let read = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let counting: Arc<dyn Storage> = Arc::new(CountingStorage {
        inner: PwriteStorage::new(),
        read: Arc::clone(&read),
    });
    // Whether this file system reports unwritten space as a hole (ext4, xfs and tmpfs do).
    let probe = PwriteStorage::new()
        .open(&image, mirrorlog_segment::io::OpenMode::Read)
        .unwrap();
    let holes = probe.data_range(TAIL / 2).unwrap().is_none();
    drop(probe);
    let mut seg =
        ActiveSegment::open_for_recovery(counting, crashed.path(), Offset(0), config(), 0).unwrap();
    let report = seg.recover(|_, _| Ok(())).unwrap();
    assert_eq!(report.batches, 6);
    assert_eq!(report.stopped_by, None);
    assert_eq!(report.zero_tail_bytes, TAIL - concat(&bs).len() as u64);
    let read = read.load(std::sync::atomic::Ordering::Relaxed);
    if holes {
        assert!(
            read < 4 << 20,
            "read {read} bytes to recover a 64 MiB preallocated tail"
        );
    }
}
