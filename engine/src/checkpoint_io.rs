//! Small whole files kept through a log's or data directory's [`Storage`] (the leader-epoch
//! checkpoint, the log manager's offset checkpoints): read whole when present, and replaced
//! atomically and durably, so that their durability is the storage's (the simulated storage's
//! crashes then decide which version survives).

use bytes::Bytes;
use mirrorlog_segment::io::{IoError, IoResult, OpenMode, Storage};
use std::io;
use std::path::{Path, PathBuf};

/// The whole contents of the file at `path`, or `None` when there is no such file.
pub(crate) fn read_if_exists(storage: &dyn Storage, path: &Path) -> IoResult<Option<Vec<u8>>> {
    let file = match storage.open(path, OpenMode::Read) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let len = file.len()?;
    let len = usize::try_from(len).map_err(|_| {
        IoError::new(
            mirrorlog_segment::io::IoOp::ReadAt,
            path,
            io::Error::from(io::ErrorKind::FileTooLarge),
        )
    })?;
    file.read_exact_vec(len, 0).map(Some)
}

/// The temporary file [`replace_durably`] writes before renaming it over `path`.
pub(crate) fn tmp_path(path: &Path) -> PathBuf {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    PathBuf::from(tmp)
}

/// Replaces the file at `path` with `bytes` as Kafka's `CheckpointFile.write` does: written to
/// `<path>.tmp`, synced, renamed over `path`, and the directory holding it synced (Kafka's
/// `Utils.atomicMoveWithFallback` with the parent flush). A crash at any point leaves the old
/// file or the new one; once this returns, the new one. On failure before the rename the `.tmp`
/// is removed (best effort) and `path` is left as it was. Callers writing the same `path`
/// concurrently must serialise (they share the `.tmp`).
pub(crate) fn replace_durably(storage: &dyn Storage, path: &Path, bytes: Vec<u8>) -> IoResult<()> {
    let tmp = tmp_path(path);
    let written = (|| {
        let file = storage.open(&tmp, OpenMode::CreateOrOpen)?;
        file.set_len(0)?;
        file.write_all_at(&[Bytes::from(bytes)], 0, true)?;
        drop(file);
        storage.rename(&tmp, path)
    })();
    if let Err(e) = written {
        let _ = storage.remove(&tmp);
        return Err(e);
    }
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    storage.sync_dir(dir)
}

/// An [`IoError`] as the index crate's error.
pub(crate) fn index_io(e: IoError) -> mirrorlog_index::Error {
    mirrorlog_index::Error::Io {
        op: e.op.as_str(),
        path: e.path,
        source: e.source,
    }
}
