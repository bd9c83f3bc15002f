//! File names and atomic file replacement, shared by every file this crate writes.
//!
//! Kafka names segment files, indexes and producer snapshots after an offset printed in decimal
//! and zero-padded to 20 digits (`LogFileUtils.filenamePrefixFromOffset`), followed by a suffix.
//! Small metadata files (checkpoints, `partition.metadata`, producer snapshots) are replaced
//! atomically: write `<name>.tmp`, fsync it, rename over the old file, fsync the directory — so a
//! crash leaves either the old file or the new one, never a torn mix.

use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::types::Offset;

/// Suffix of a segment's record batches.
pub const LOG_FILE_SUFFIX: &str = ".log";
/// Suffix of a segment's offset index.
pub const INDEX_FILE_SUFFIX: &str = ".index";
/// Suffix of a segment's time index.
pub const TIME_INDEX_FILE_SUFFIX: &str = ".timeindex";
/// Suffix of a segment's transaction index (created lazily).
pub const TXN_INDEX_FILE_SUFFIX: &str = ".txnindex";
/// Suffix of a producer-state snapshot.
pub const PRODUCER_SNAPSHOT_FILE_SUFFIX: &str = ".snapshot";
/// Appended to a file awaiting asynchronous deletion.
pub const DELETED_FILE_SUFFIX: &str = ".deleted";
/// Appended to a file written by the log cleaner before it is swapped in.
pub const CLEANED_FILE_SUFFIX: &str = ".cleaned";
/// Appended to a file that is about to replace another (compaction, recovery).
pub const SWAP_FILE_SUFFIX: &str = ".swap";
/// Appended to a file being written before it atomically replaces its target.
pub const TMP_FILE_SUFFIX: &str = ".tmp";

/// The 20-digit, zero-padded decimal name Kafka gives files starting at `offset`
/// (`00000000000000000042` for 42).
///
/// Panics on a negative offset: no file is ever named after one, so it is a programmer error.
pub fn filename_prefix_from_offset(offset: Offset) -> String {
    assert!(
        offset.get() >= 0,
        "file names are made from non-negative offsets, got {offset}"
    );
    format!("{:020}", offset.get())
}

/// The offset a file is named after: the decimal digits before the first `.` of `file_name`
/// (Kafka's `offsetFromFileName`). `None` when there is no `.`, the prefix is empty or not all
/// ASCII digits, or it does not fit an `i64`.
pub fn offset_from_file_name(file_name: &str) -> Option<Offset> {
    let (prefix, _) = file_name.split_once('.')?;
    if prefix.is_empty() || !prefix.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    prefix.parse::<i64>().ok().map(Offset)
}

/// `dir/<20-digit offset><suffix>`, e.g. `segment_file(dir, Offset(0), INDEX_FILE_SUFFIX)`.
pub fn segment_file(dir: &Path, offset: Offset, suffix: &str) -> PathBuf {
    let name = format!("{}{suffix}", filename_prefix_from_offset(offset));
    // Sized exactly: every open segment keeps its files' paths (`Path::join` would leave up to
    // half of each allocation unused, ~30 bytes a path, 10,000 partitions × 4 paths).
    let mut path = PathBuf::with_capacity(dir.as_os_str().len() + 1 + name.len());
    path.push(dir);
    path.push(name);
    path
}

/// `path` with [`TMP_FILE_SUFFIX`] appended.
pub(crate) fn tmp_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(TMP_FILE_SUFFIX);
    PathBuf::from(name)
}

/// The directory holding `path` (`.` for a bare file name).
fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// fsyncs a directory so that renames and creations inside it are durable.
pub(crate) fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(Error::io("fsync directory", dir))
}

/// Replaces `path` with `bytes` atomically and durably: write `<path>.tmp`, fsync it, rename it
/// over `path`, fsync the parent directory. On failure the temporary file is removed (best
/// effort) and `path` is left as it was.
pub(crate) fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    let tmp = tmp_path(path);
    let written = (|| {
        let mut file = File::create(&tmp).map_err(Error::io("create", &tmp))?;
        file.write_all(bytes).map_err(Error::io("write", &tmp))?;
        file.sync_all().map_err(Error::io("fsync", &tmp))?;
        fs::rename(&tmp, path).map_err(Error::io("rename", &tmp))
    })();
    if written.is_err() {
        // The original error is the one worth reporting; a leftover .tmp is harmless.
        let _ = fs::remove_file(&tmp);
        return written;
    }
    sync_dir(parent_dir(path))
}

/// Reads a whole file, or `None` when it does not exist.
pub(crate) fn read_if_exists(path: &Path) -> Result<Option<Vec<u8>>> {
    match fs::read(path) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::io("read", path)(e)),
    }
}

/// Reads a whole text file, or `None` when it does not exist; bytes that are not UTF-8 are
/// [`Error::Corrupt`].
pub(crate) fn read_text_if_exists(path: &Path) -> Result<Option<String>> {
    let Some(bytes) = read_if_exists(path)? else {
        return Ok(None);
    };
    String::from_utf8(bytes)
        .map(Some)
        .map_err(|e| Error::corrupt(path, e.utf8_error().valid_up_to() as u64, "not valid UTF-8"))
}

/// Deletes a file; `false` if it did not exist.
pub(crate) fn remove_if_exists(path: &Path) -> Result<bool> {
    match fs::remove_file(path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(Error::io("delete", path)(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn file_names_are_twenty_zero_padded_digits() {
        assert_eq!(
            filename_prefix_from_offset(Offset(0)),
            "00000000000000000000"
        );
        assert_eq!(
            filename_prefix_from_offset(Offset(129)),
            "00000000000000000129"
        );
        assert_eq!(
            filename_prefix_from_offset(Offset(i64::MAX)),
            "09223372036854775807"
        );
    }

    #[test]
    #[should_panic(expected = "non-negative")]
    fn negative_offsets_make_no_file_name() {
        filename_prefix_from_offset(Offset(-1));
    }

    #[test]
    fn offsets_parse_from_any_segment_file_name() {
        for name in [
            "00000000000000000129.snapshot",
            "00000000000000000129.log",
            "00000000000000000129.index",
            "00000000000000000129.timeindex.deleted",
            "129.txnindex",
        ] {
            assert_eq!(offset_from_file_name(name), Some(Offset(129)), "{name}");
        }
    }

    #[test]
    fn names_that_are_not_offsets_parse_to_none() {
        for name in [
            "leader-epoch-checkpoint",
            "partition.metadata",
            ".snapshot",
            "-0000000001.log",
            "+1.log",
            "12a.log",
            "99999999999999999999.log",
            "00000000000000000000",
        ] {
            assert_eq!(offset_from_file_name(name), None, "{name}");
        }
    }

    #[test]
    fn segment_files_join_dir_name_and_suffix() {
        assert_eq!(
            segment_file(Path::new("/d/foo-0"), Offset(7), TXN_INDEX_FILE_SUFFIX),
            PathBuf::from("/d/foo-0/00000000000000000007.txnindex")
        );
    }

    #[test]
    fn atomic_write_replaces_the_file_and_leaves_no_tmp() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        write_atomically(&path, b"one").unwrap();
        write_atomically(&path, b"two").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"two");
        assert!(!tmp_path(&path).exists());
    }

    #[test]
    fn atomic_write_into_a_missing_dir_is_an_io_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("missing/f");
        let err = write_atomically(&path, b"x").unwrap_err();
        assert!(matches!(err, Error::Io { op: "create", .. }), "{err:?}");
    }

    #[test]
    fn reading_or_removing_a_missing_file_is_none_or_false() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(read_if_exists(&dir.path().join("nope")).unwrap(), None);
        assert_eq!(read_text_if_exists(&dir.path().join("nope")).unwrap(), None);
        assert!(!remove_if_exists(&dir.path().join("nope")).unwrap());
    }

    #[test]
    fn text_that_is_not_utf8_is_corrupt_at_the_first_bad_byte() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t");
        fs::write(&path, b"ok\n\xff").unwrap();
        let err = read_text_if_exists(&path).unwrap_err();
        assert!(matches!(err, Error::Corrupt { position: 3, .. }), "{err:?}");
    }

    proptest! {
        #[test]
        fn file_name_offsets_round_trip(offset in 0i64..=i64::MAX) {
            let name = format!("{}.log", filename_prefix_from_offset(Offset(offset)));
            prop_assert_eq!(name.len(), 24);
            prop_assert_eq!(offset_from_file_name(&name), Some(Offset(offset)));
        }
    }
}
