//! Shared by the broker's integration tests.
#![allow(dead_code)]

pub mod compacted_source;
pub mod configs;
pub mod current_leader;
pub mod fetch_session;
pub mod groups;
pub mod internal_topics;
pub mod long_poll;
pub mod mirror;
pub mod mirror_groups;
pub mod offline_partition;
pub mod produce;
pub mod two_dir_broker;
pub mod txn;
pub mod wire;

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

/// A `LogManager` over data directories `d1` and `d2` on the simulated storage `sim` (one
/// recovery thread, default log settings), for the tests of a directory that fails.
pub fn two_dir_logs(
    d1: &std::path::Path,
    d2: &std::path::Path,
    sim: &std::sync::Arc<mirrorlog_segment::io::SimStorage>,
) -> std::sync::Arc<mirrorlog_engine::manager::LogManager> {
    let mut cfg = mirrorlog_engine::manager::LogManagerConfig::new(d1);
    cfg.data_dirs = vec![d1.to_path_buf(), d2.to_path_buf()];
    cfg.recovery_threads = 1;
    let storage: std::sync::Arc<dyn mirrorlog_segment::io::Storage> = sim.clone();
    std::sync::Arc::new(
        mirrorlog_engine::manager::LogManager::open(
            cfg,
            storage,
            mirrorlog_engine::clock::ManualClock::new(1_700_000_000_000),
        )
        .unwrap()
        .0,
    )
}

/// A broker on `dir` (cluster id `test-cluster`, the pwrite backend, a manual clock at
/// `now_ms`) without coordinators: requests go to its handlers directly.
pub fn plain_broker(dir: &std::path::Path, now_ms: i64) -> mirrorlog_broker::broker::Broker {
    let mut config = mirrorlog_broker::broker::BrokerConfig::new(dir, "127.0.0.1", 9092);
    config.cluster_id = Some("test-cluster".into());
    mirrorlog_broker::broker::Broker::open(
        config,
        std::sync::Arc::new(mirrorlog_segment::io::PwriteStorage::new()),
        mirrorlog_engine::clock::ManualClock::new(now_ms),
    )
    .unwrap()
}
