//! The crate's one error type.
//!
//! Operating errors (I/O failures, corrupt files, a full index, an offset that does not fit a
//! segment) are returned as [`Error`]; programmer errors (appending out of order, writing to a
//! sealed index) panic instead, as `CONVENTIONS.md` asks. Every variant names the file it is
//! about, and an I/O error keeps its source.
//!
//! [`ErrorChain`] renders any error with the causes its own message leaves out; it lives here,
//! at the bottom of the crate graph, so that every crate writing an error into an operator-facing
//! text (an offline directory's reason, a FAILED partition's reason, an `error_message`, a log
//! line) uses the same one.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use crate::types::Offset;

/// Everything that can go wrong reading or writing the files this crate owns.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A system call failed. `op` names what we were doing (`"open"`, `"fsync"`, `"rename"`…).
    #[error("I/O error during {op} of {}", path.display())]
    Io {
        /// What we were doing.
        op: &'static str,
        /// The file or directory it was done to.
        path: PathBuf,
        /// The error the operating system returned.
        #[source]
        source: io::Error,
    },

    /// A file's bytes do not follow its format: bad length, checksum, version, order or syntax.
    #[error("corrupt {} at byte {position}: {reason}", path.display())]
    Corrupt {
        /// The corrupt file.
        path: PathBuf,
        /// Byte position of the first bad byte (for text files: the start of the bad line).
        position: u64,
        /// What is wrong, in words.
        reason: String,
    },

    /// The offset cannot be stored in this index: it is below the index's base offset or more
    /// than `i32::MAX` above it (the segment should have rolled before this offset).
    #[error(
        "offset {offset} does not fit index {} with base offset {base_offset}",
        path.display()
    )]
    InvalidOffset {
        /// The index file.
        path: PathBuf,
        /// The offset that was to be appended.
        offset: Offset,
        /// The index's base offset.
        base_offset: Offset,
    },

    /// The index has no free slot left; the segment must roll.
    #[error("index {} is full ({max_entries} entries)", path.display())]
    IndexFull {
        /// The index file.
        path: PathBuf,
        /// How many entries it holds.
        max_entries: usize,
    },

    /// A size or other setting given to this crate is out of its valid range.
    #[error("invalid {name}: {reason}")]
    InvalidConfig {
        /// The setting's name.
        name: &'static str,
        /// Why it was rejected.
        reason: String,
    },
}

/// An error with the causes its own message leaves out, `outer: cause: …`, for every text an
/// operator reads: an offline data directory's reason, a FAILED mirror partition's reason, a
/// response's `error_message`, a log line.
///
/// [`Error::Io`] names the call and the file but keeps the operating system's error
/// (`No space left on device (os error 28)`) as its [`source`](std::error::Error::source) only, as
/// `thiserror` errors do, so `{e}` alone would not say why the call failed. A cause whose text the
/// message already shows (an error that formats its source into its message, a
/// `#[error(transparent)]` wrapper) is not repeated. Error types keep their `Display`: wire texts
/// and tests depend on it; only the places that write an operator-facing text use this.
#[derive(Debug, Clone, Copy)]
pub struct ErrorChain<'a>(pub &'a (dyn std::error::Error + 'static));

impl fmt::Display for ErrorChain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut text = self.0.to_string();
        let mut source = self.0.source();
        while let Some(s) = source {
            let cause = s.to_string();
            if !text.contains(&cause) {
                text.push_str(": ");
                text.push_str(&cause);
            }
            source = s.source();
        }
        f.write_str(&text)
    }
}

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// A closure turning an [`io::Error`] into [`Error::Io`] for `op` on `path`, for `map_err`.
    pub(crate) fn io(op: &'static str, path: &Path) -> impl FnOnce(io::Error) -> Error {
        move |source| Error::Io {
            op,
            path: path.to_path_buf(),
            source,
        }
    }

    /// An [`Error::Corrupt`] for `path` at `position`.
    pub(crate) fn corrupt(path: &Path, position: u64, reason: impl Into<String>) -> Error {
        Error::Corrupt {
            path: path.to_path_buf(),
            position,
            reason: reason.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error as _;

    #[test]
    fn io_errors_keep_their_source_and_name_the_file() {
        let err = Error::io("open", Path::new("/x/00000000000000000000.index"))(io::Error::new(
            io::ErrorKind::NotFound,
            "gone",
        ));
        assert_eq!(
            err.to_string(),
            "I/O error during open of /x/00000000000000000000.index"
        );
        assert_eq!(err.source().expect("source kept").to_string(), "gone");
    }

    /// An index file's I/O error is rendered with the operating system's error its message
    /// leaves out; a wrapper whose message already shows a cause does not repeat it.
    #[test]
    fn error_chain_names_each_cause_its_message_leaves_out() {
        let err =
            Error::io("write_at", Path::new("/d/x.timeindex"))(io::Error::from_raw_os_error(28));
        let enospc = io::Error::from_raw_os_error(28).to_string();
        assert_eq!(
            ErrorChain(&err).to_string(),
            format!("I/O error during write_at of /d/x.timeindex: {enospc}")
        );

        /// A wrapper that formats its source into its own message.
        #[derive(Debug, thiserror::Error)]
        #[error("sealing failed: {0}")]
        struct Shown(#[source] io::Error);
        let shown = Shown(io::Error::from_raw_os_error(28));
        assert_eq!(ErrorChain(&shown).to_string(), shown.to_string());

        /// A wrapper that keeps its source out of its message, over one that shows its own.
        #[derive(Debug, thiserror::Error)]
        #[error("closing its logs")]
        struct Hidden(#[source] Shown);
        let hidden = Hidden(Shown(io::Error::from_raw_os_error(5)));
        let eio = io::Error::from_raw_os_error(5).to_string();
        assert_eq!(
            ErrorChain(&hidden).to_string(),
            format!("closing its logs: sealing failed: {eio}")
        );
    }

    #[test]
    fn corrupt_errors_name_file_position_and_reason() {
        let err = Error::corrupt(Path::new("a.snapshot"), 6, "bad crc");
        assert_eq!(err.to_string(), "corrupt a.snapshot at byte 6: bad crc");
    }
}
