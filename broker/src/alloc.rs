//! A global allocator that keeps a hostile request from aborting the broker.
//!
//! The `kafka-protocol` decoders (0.18) size arrays with `Vec::with_capacity(n)` from the length
//! on the wire before checking that `n` elements can follow. A 14-byte Metadata request declaring
//! `i32::MAX` topics asks for ~154 GB; the system allocator refuses, and Rust aborts the process —
//! no `catch_unwind` can stop an allocation failure. Upstream fixes are open, not released.
//!
//! [`NoReserveForHuge`] answers every allocation of 1 GiB or more with an anonymous
//! `mmap(MAP_NORESERVE)`: address space only, no memory committed until touched. The decoder's
//! huge, never-touched `Vec` then costs nothing, the decode fails cleanly on the missing bytes,
//! the broker closes that connection, and the mapping is returned. Everything smaller goes to the
//! system allocator. A real use of ≥ 1 GiB behaves like ordinary overcommitted memory.
//!
//! The binary installs it (`#[global_allocator]` in `src/main.rs`).
//!
//! [`limit_malloc_arenas`] caps glibc's malloc arenas at the number of CPUs (glibc's own cap is
//! 8 per CPU). Every thread that allocates while another holds its arena gets an arena of its
//! own, and memory freed into an arena stays there for that arena's next allocations: the
//! fetchers' and appliers' response buffers, freed in one arena and wanted in another, kept
//! about 7 MiB more resident in the 10,000-partition mirror benchmark (67.4 → 59.5 MiB peak
//! RSS growth with the cap, tmpfs, same build; README "Mirroring"). The broker's hot paths
//! allocate little (an append nothing), so fewer arenas cost no measured throughput there.
//! `MALLOC_ARENA_MAX` in the environment, when set, is glibc's and is left alone.

use std::alloc::{GlobalAlloc, Layout, System};

/// Allocations at or above this size are mapped with `MAP_NORESERVE`.
pub const HUGE_BYTES: usize = 1 << 30;
const PAGE: usize = 4096;

/// See the module docs.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoReserveForHuge;

fn is_huge(layout: Layout) -> bool {
    layout.size() >= HUGE_BYTES && layout.align() <= PAGE
}

// SAFETY: every block is returned by the same path that made it: `is_huge` depends only on the
// layout, which callers must pass unchanged to `dealloc`; huge blocks are page-aligned mappings
// (alignment ≤ one page is guaranteed) of at least `size` bytes, zero-filled by the kernel.
unsafe impl GlobalAlloc for NoReserveForHuge {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if is_huge(layout) {
            // SAFETY: an anonymous private mapping with no address hint has no preconditions.
            let p = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    layout.size(),
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                    -1,
                    0,
                )
            };
            if p == libc::MAP_FAILED {
                std::ptr::null_mut()
            } else {
                p.cast()
            }
        } else {
            // SAFETY: forwarded unchanged; the caller upholds `GlobalAlloc::alloc`'s contract.
            unsafe { System.alloc(layout) }
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if is_huge(layout) {
            // SAFETY: as `alloc`; fresh anonymous mappings are zero-filled.
            unsafe { self.alloc(layout) }
        } else {
            // SAFETY: forwarded unchanged.
            unsafe { System.alloc_zeroed(layout) }
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if is_huge(layout) {
            // SAFETY: `ptr` came from our `mmap` of `layout.size()` bytes (same layout, same
            // classification).
            unsafe { libc::munmap(ptr.cast(), layout.size()) };
        } else {
            // SAFETY: `ptr` came from `System` with this layout.
            unsafe { System.dealloc(ptr, layout) }
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller guarantees `new_size` with `layout.align()` is a valid layout.
        let new_layout = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
        if !is_huge(layout) && !is_huge(new_layout) {
            // SAFETY: forwarded unchanged.
            return unsafe { System.realloc(ptr, layout, new_size) };
        }
        // SAFETY: a fresh block of the new layout from the matching path.
        let new = unsafe { self.alloc(new_layout) };
        if !new.is_null() {
            // SAFETY: both blocks are valid for the copied length and do not overlap; the old
            // one is then freed with its own layout.
            unsafe {
                std::ptr::copy_nonoverlapping(ptr, new, layout.size().min(new_size));
                self.dealloc(ptr, layout);
            }
        }
        new
    }
}

/// Caps glibc's malloc arenas at the number of CPUs this process may run on (module docs),
/// unless `MALLOC_ARENA_MAX` is set. Returns the cap applied, `None` when none was (the variable
/// is set, or this is not glibc). Call it first thing in `main`, before threads start.
pub fn limit_malloc_arenas() -> Option<usize> {
    if std::env::var_os("MALLOC_ARENA_MAX").is_some() {
        return None;
    }
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    set_arena_max(cpus)
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn set_arena_max(n: usize) -> Option<usize> {
    let n = n.min(libc::c_int::MAX as usize) as libc::c_int;
    // SAFETY: `mallopt` takes plain integers; glibc applies M_ARENA_MAX to arenas made later.
    (unsafe { libc::mallopt(libc::M_ARENA_MAX, n) } == 1).then_some(n as usize)
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn set_arena_max(_: usize) -> Option<usize> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[test]
    fn the_arena_cap_is_the_cpu_count_unless_the_environment_sets_one() {
        let cpus = std::thread::available_parallelism().unwrap().get();
        match std::env::var_os("MALLOC_ARENA_MAX") {
            Some(_) => assert_eq!(limit_malloc_arenas(), None),
            None => assert_eq!(limit_malloc_arenas(), Some(cpus)),
        }
        assert_eq!(set_arena_max(3), Some(3), "glibc takes M_ARENA_MAX");
    }

    #[test]
    fn huge_and_small_blocks_round_trip_through_the_right_path() {
        let a = NoReserveForHuge;
        for size in [16usize, 4096, HUGE_BYTES, 64 * HUGE_BYTES] {
            let layout = Layout::from_size_align(size, 8).unwrap();
            // SAFETY: valid non-zero layouts; each block is written, read and freed once.
            unsafe {
                let p = a.alloc(layout);
                assert!(!p.is_null(), "{size}");
                p.write(7);
                assert_eq!(p.read(), 7);
                // Shrink to a small block (copies only what fits, touching nothing else).
                let q = a.realloc(p, layout, 64);
                assert!(!q.is_null());
                assert_eq!(q.read(), 7);
                a.dealloc(q, Layout::from_size_align(64, 8).unwrap());
            }
        }
    }
}
