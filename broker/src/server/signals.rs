//! SIGTERM and SIGINT → graceful shutdown, for `mirrorlog serve`.
//!
//! The signal handler only writes one byte to a socket pair (`write(2)` is async-signal-safe);
//! a watcher thread reads it and calls [`ShutdownHandle::shutdown`] on every registered handle.
//! The handlers are installed with `SA_RESETHAND`: a second SIGTERM or SIGINT gets the default
//! action and ends the process at once, for when a graceful shutdown hangs.

use super::ShutdownHandle;
use parking_lot::Mutex;
use std::io::{self, Read};
use std::os::fd::IntoRawFd;
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicI32, Ordering};
use tracing::{info, warn};

/// The write end of the signal socket pair, or -1 before installation. Never closed once set.
static SIGNAL_WRITE_FD: AtomicI32 = AtomicI32::new(-1);

/// The handles the watcher thread triggers; `None` until the handlers are installed.
static HANDLES: Mutex<Option<Vec<ShutdownHandle>>> = Mutex::new(None);

/// Installs SIGTERM and SIGINT handlers that trigger `handle` (graceful shutdown of its server).
///
/// May be called more than once (every handle given is triggered); the handlers are installed
/// on the first call. After the first signal the default action is restored, so a second
/// SIGTERM or SIGINT terminates the process.
pub fn shutdown_on_signals(handle: ShutdownHandle) -> io::Result<()> {
    let mut handles = HANDLES.lock();
    if let Some(list) = handles.as_mut() {
        list.push(handle);
        return Ok(());
    }
    let (tx, mut rx) = UnixStream::pair()?;
    tx.set_nonblocking(true)?;
    std::thread::Builder::new().name("mirrorlog-signals".into()).spawn(move || {
        let mut byte = [0u8; 1];
        loop {
            match rx.read(&mut byte) {
                Ok(0) => return,
                Ok(_) => {
                    info!("SIGTERM or SIGINT received; shutting down");
                    let handles = HANDLES.lock().clone().unwrap_or_default();
                    for h in handles {
                        h.shutdown();
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    warn!(error = %e, "signal watcher failed; signals no longer stop the server");
                    return;
                }
            }
        }
    })?;
    // Leaked on purpose: the handler may write to it at any time until the process ends.
    SIGNAL_WRITE_FD.store(tx.into_raw_fd(), Ordering::SeqCst);
    for signal in [libc::SIGTERM, libc::SIGINT] {
        install(signal)?;
    }
    *handles = Some(vec![handle]);
    Ok(())
}

fn install(signal: libc::c_int) -> io::Result<()> {
    // SAFETY: an all-zero `sigaction` is a valid value (empty mask, no flags, SIG_DFL) that we
    // then fill in.
    let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
    action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
    action.sa_flags = libc::SA_RESTART | libc::SA_RESETHAND;
    // SAFETY: `action.sa_mask` is a live, exclusively borrowed sigset_t.
    unsafe { libc::sigemptyset(&mut action.sa_mask) };
    // SAFETY: `action` is fully initialised and outlives the call; the handler it installs only
    // performs async-signal-safe operations; a null old-action pointer is allowed.
    let rc = unsafe { libc::sigaction(signal, &action, std::ptr::null_mut()) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

extern "C" fn on_signal(_signal: libc::c_int) {
    let fd = SIGNAL_WRITE_FD.load(Ordering::SeqCst);
    if fd < 0 {
        return;
    }
    // SAFETY: only async-signal-safe calls: errno is saved and restored around write(2) so the
    // interrupted code does not see it change; `fd` is the never-closed, non-blocking write end
    // of the signal socket pair, and the buffer is a live one-byte array.
    unsafe {
        let errno = errno_location();
        let saved = *errno;
        libc::write(fd, [1u8].as_ptr().cast(), 1);
        // SA_RESETHAND only reset the signal delivered: restore the default action of the
        // other one too, so that any second SIGTERM or SIGINT terminates (sigaction(2) is
        // async-signal-safe; a zeroed sigaction is SIG_DFL with an empty mask).
        let default: libc::sigaction = std::mem::zeroed();
        for s in [libc::SIGTERM, libc::SIGINT] {
            libc::sigaction(s, &default, std::ptr::null_mut());
        }
        *errno = saved;
    }
}

#[cfg(any(target_os = "linux", target_os = "android"))]
unsafe fn errno_location() -> *mut libc::c_int {
    // SAFETY: returns the calling thread's errno address; no preconditions.
    unsafe { libc::__errno_location() }
}

#[cfg(any(target_os = "macos", target_os = "ios", target_os = "freebsd"))]
unsafe fn errno_location() -> *mut libc::c_int {
    // SAFETY: returns the calling thread's errno address; no preconditions.
    unsafe { libc::__error() }
}
