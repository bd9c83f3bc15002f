//! A broker with its listener and background threads: what `mirrorlog serve` runs, and what
//! `mirrorlog demo` and tests start in-process (several on one machine, on free loopback ports).

use crate::broker::{Broker, BrokerConfig};
use crate::server::{Server, ServerConfig, ShutdownHandle};
use mirrorlog_engine::clock::SystemClock;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

/// A started broker: listening, ticking (coordinator timeouts), maintaining (retention,
/// checkpoints) and hosting its coordinators and mirrors.
pub struct RunningBroker {
    /// The address clients connect to.
    pub addr: SocketAddr,
    /// The broker.
    pub broker: Arc<Broker>,
    handle: ShutdownHandle,
    server: Option<JoinHandle<std::io::Result<()>>>,
    background: Vec<JoinHandle<()>>,
    stop: Arc<AtomicBool>,
}

impl std::fmt::Debug for RunningBroker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunningBroker")
            .field("addr", &self.addr)
            .finish()
    }
}

/// A free loopback port (bound, then released for the broker to bind).
pub fn free_loopback_port() -> std::io::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

impl RunningBroker {
    /// Opens the broker (recovering after a crash), installs the coordinators, binds the
    /// listener and starts serving on a background thread.
    ///
    /// # Errors
    /// Invalid settings, storage failure, or the address cannot be bound.
    pub fn start(config: BrokerConfig, server: ServerConfig) -> anyhow::Result<RunningBroker> {
        RunningBroker::start_with_loggers(config, server, None)
    }

    /// As [`start`](Self::start), serving the BROKER_LOGGER config resource through `loggers`
    /// (the process's log levels) when given, from the first request on.
    ///
    /// # Errors
    /// As [`start`](Self::start).
    pub fn start_with_loggers(
        config: BrokerConfig,
        server: ServerConfig,
        loggers: Option<Arc<crate::loggers::Loggers>>,
    ) -> anyhow::Result<RunningBroker> {
        let storage = mirrorlog_segment::io::default_storage();
        let broker = Arc::new(Broker::open(config, storage, Arc::new(SystemClock))?);
        broker.register_arc();
        if let Some(l) = loggers {
            broker.install_loggers(l);
        }
        crate::coordinators::install(&broker)?;
        broker.mirrors.restore(&broker)?;
        let srv = Server::bind(server.clone(), broker.clone())?;
        let addr = srv.local_addr();
        broker.record_listener(ServerConfig {
            listen: addr,
            ..server
        });
        let handle = srv.shutdown_handle();
        let stop = Arc::new(AtomicBool::new(false));
        let mut background = vec![];
        {
            let (broker, stop) = (broker.clone(), stop.clone());
            background.push(std::thread::Builder::new().name("ticker".into()).spawn(
                move || {
                    let mut n = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        n += 1;
                        // A panic in one round (a bug) is logged and the next round runs: a dead
                        // ticker would silently end transaction timeouts, marker retries, session
                        // expiry and log maintenance for the rest of the process.
                        let round = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                            broker.tick();
                            if n.is_multiple_of(50) {
                                broker.maintain();
                            }
                        }));
                        if let Err(panic) = round {
                            let what = panic
                                .downcast_ref::<&str>()
                                .map(|s| s.to_string())
                                .or_else(|| panic.downcast_ref::<String>().cloned())
                                .unwrap_or_default();
                            tracing::error!(panic = %what, "a background round (timeouts, expiry, maintenance) panicked; the next one runs as usual");
                        }
                        std::thread::sleep(Duration::from_millis(100));
                    }
                },
            )?);
        }
        {
            // When shutdown starts, release requests blocked in coordinators (a JoinGroup waits
            // for its rebalance) so the server's wait for in-flight requests ends promptly.
            let (broker, stop, handle) = (broker.clone(), stop.clone(), handle.clone());
            background.push(
                std::thread::Builder::new()
                    .name("shutdown-watch".into())
                    .spawn(move || {
                        while !handle.is_shutdown() && !stop.load(Ordering::Relaxed) {
                            std::thread::sleep(Duration::from_millis(50));
                        }
                        broker.shutdown_coordinators();
                    })?,
            );
        }
        let server = std::thread::Builder::new()
            .name("server".into())
            .spawn(move || srv.run())?;
        Ok(RunningBroker {
            addr,
            broker,
            handle,
            server: Some(server),
            background,
            stop,
        })
    }

    /// Starts a broker for `data_dir` on a free loopback port (demo and tests).
    ///
    /// # Errors
    /// As [`start`](Self::start).
    pub fn start_local(data_dir: &std::path::Path, node_id: i32) -> anyhow::Result<RunningBroker> {
        let port = free_loopback_port()?;
        let mut cfg = BrokerConfig::new(data_dir, "127.0.0.1", port as i32);
        cfg.node_id = node_id;
        let server = ServerConfig {
            listen: SocketAddr::from(([127, 0, 0, 1], port)),
            ..ServerConfig::default()
        };
        RunningBroker::start(cfg, server)
    }

    /// A handle that stops the listener (signals use it).
    pub fn shutdown_handle(&self) -> ShutdownHandle {
        self.handle.clone()
    }

    /// Blocks until the listener stops (a signal or [`shutdown_handle`](Self::shutdown_handle)),
    /// then shuts down cleanly.
    ///
    /// # Errors
    /// The server failed, or the clean shutdown did.
    pub fn wait(mut self) -> anyhow::Result<()> {
        let served = match self.server.take() {
            Some(s) => s
                .join()
                .map_err(|_| anyhow::anyhow!("server thread panicked"))
                .and_then(|r| r.map_err(anyhow::Error::from)),
            None => Ok(()),
        };
        // Even when the listener failed, its connections are drained: stop the background
        // threads and close the logs cleanly (flushed, checkpoints, clean-shutdown marker).
        let finished = self.finish();
        served.and(finished)
    }

    /// Stops the listener, lets in-flight requests finish and shuts down cleanly (the next
    /// start skips recovery).
    ///
    /// # Errors
    /// The server failed, or the clean shutdown did.
    pub fn shutdown(self) -> anyhow::Result<()> {
        self.handle.shutdown();
        self.wait()
    }

    fn finish(self) -> anyhow::Result<()> {
        let RunningBroker {
            broker,
            background,
            stop,
            ..
        } = self;
        stop.store(true, Ordering::Relaxed);
        for t in background {
            t.join()
                .map_err(|_| anyhow::anyhow!("a background thread panicked"))?;
        }
        // The mirrors' threads hold the broker weakly but upgrade it while they sync topics:
        // stopped first, none can hold it at the unwrap (which would skip the clean close).
        broker.mirrors.shutdown();
        let broker = Arc::try_unwrap(broker)
            .map_err(|_| anyhow::anyhow!("broker still in use at shutdown"))?;
        broker.shutdown()
    }
}
