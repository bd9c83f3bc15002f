//! A small tmpfs mounted for one test: a real file system that fills up (ENOSPC) and can be
//! grown in place (`mount -o remount,size=…`).
//!
//! Mounting needs root (CAP_SYS_ADMIN), which CI has; elsewhere set
//! `MIRRORLOG_SKIP_MOUNT_TESTS=1` to skip such a test knowingly.

use std::path::{Path, PathBuf};
use std::process::Command;

/// A tmpfs mounted for the test's lifetime (unmounted, lazily, on drop).
pub struct Tmpfs(pub PathBuf);

impl Tmpfs {
    /// Mounts a tmpfs of `size` (`mount`'s syntax: `12m`) at `at`, creating the directory.
    /// `None` when it cannot be mounted and `MIRRORLOG_SKIP_MOUNT_TESTS` is set (the caller
    /// returns: the test is skipped, saying so).
    ///
    /// # Panics
    /// It cannot be mounted and `MIRRORLOG_SKIP_MOUNT_TESTS` is unset.
    pub fn mount(at: &Path, size: &str) -> Option<Tmpfs> {
        std::fs::create_dir_all(at).unwrap();
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(at)
            .output()
            .expect("run mount");
        if out.status.success() {
            return Some(Tmpfs(at.to_path_buf()));
        }
        let why = String::from_utf8_lossy(&out.stderr);
        if std::env::var_os("MIRRORLOG_SKIP_MOUNT_TESTS").is_some() {
            eprintln!("skipped (MIRRORLOG_SKIP_MOUNT_TESTS): cannot mount a tmpfs: {why}");
            return None;
        }
        panic!(
            "cannot mount a tmpfs ({why}); this test needs root — set \
             MIRRORLOG_SKIP_MOUNT_TESTS=1 to skip it"
        );
    }

    /// Grows (or shrinks) the file system to `size` in place: space returns to its writers.
    pub fn grow(&self, size: &str) {
        let st = Command::new("mount")
            .args(["-o", &format!("remount,size={size}")])
            .arg(&self.0)
            .status()
            .unwrap();
        assert!(st.success(), "remount tmpfs");
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}
