//! Shared by the broker's integration tests.
#![allow(dead_code)]

pub mod long_poll;
pub mod mirror;

/// Runs `f` with the process's open-file limit set so that only `spare` more descriptors can be
/// opened, then restores the limit (the limit is process-wide: use it in a test binary of one
/// test). How the tests make a storage operation fail half-way with EMFILE.
pub fn with_spare_fds<R>(spare: usize, f: impl FnOnce() -> R) -> R {
    let mut old = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: plain libc calls on valid arguments.
    unsafe {
        assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut old), 0);
        let free = libc::dup(0);
        assert!(free >= 0);
        libc::close(free);
        let lim = libc::rlimit {
            rlim_cur: free as libc::rlim_t + spare as libc::rlim_t,
            rlim_max: old.rlim_max,
        };
        assert_eq!(libc::setrlimit(libc::RLIMIT_NOFILE, &lim), 0);
    }
    let r = f();
    // SAFETY: as above.
    unsafe {
        assert_eq!(libc::setrlimit(libc::RLIMIT_NOFILE, &old), 0);
    }
    r
}
