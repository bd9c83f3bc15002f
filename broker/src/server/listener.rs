//! The TCP listener: accepts connections, runs one thread per connection, and shuts down
//! gracefully.
//!
//! Bounds: at most `max_connections` connections — at the bound the accept loop stops accepting
//! until one closes, so a new connection waits in the listen backlog (Kafka's
//! `ConnectionQuotas.waitForConnectionSlot`) — and at most `max_connections_per_ip` (or its
//! override) from one address, beyond which a connection is accepted and closed at once with a
//! log line (Kafka's `TooManyConnectionsException`); at most `request_max_bytes` per request.
//! A connection handles its requests one after another, in order; a handler may finish a
//! response later ([`Reply::Later`], e.g. an acks=all Produce waiting for its `fdatasync`), and
//! then the connection goes on reading and handling while at most [`MAX_PENDING_RESPONSES`]
//! responses wait. A per-connection writer thread finishes (runs the `Later` work of) and sends
//! those in request order; while none waits, the reading thread answers directly — a `Later`
//! one too, when no further request has arrived.
//!
//! Shutdown: [`ShutdownHandle::shutdown`] sets the stop flag under the connection registry's lock,
//! shuts down the *read* half of every registered connection (a reader blocked waiting for the
//! next request wakes up with end-of-file, while a request being handled can still write its
//! response) and wakes the accept loop through a socket pair. [`Server::run`] then closes the
//! listening socket and returns once every connection thread has finished. A connection is
//! registered, under the same lock, before its thread starts, so none can slip past the flag.

use super::frame::{self, Decoded, ReadFrameError};
use super::{Handler, MirrorRequestContext, Reply, RequestContext};
use kafka_protocol::messages::{ApiKey, RequestHeader, RequestKind, ResponseKind};
use mirrorlog_index::ErrorChain;
use parking_lot::{Condvar, Mutex};
use std::any::Any;
use std::collections::HashMap;
use std::fmt;
use std::io::{self, BufReader, Write};
use std::net::{IpAddr, Shutdown, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use tracing::{debug, error, info, warn};

/// Read buffer per connection: small requests pipelined by a client arrive in one syscall; large
/// ones bypass it.
const READ_BUFFER_BYTES: usize = 8 * 1024;

/// The most responses of one connection waiting to be sent while it reads on (librdkafka keeps
/// at most 5 requests in flight for an idempotent producer, 1 000 000 otherwise).
pub const MAX_PENDING_RESPONSES: usize = 32;

/// How long the accept loop pauses after running out of file descriptors or memory, so that it
/// does not spin on an error that only a closing connection can clear. Shutdown still wakes it.
const ACCEPT_BACKOFF_MS: i32 = 100;

/// How long [`Server::run`] lets connections finish after shutdown before it closes them
/// outright (a response being written to a peer that does not read would otherwise hold the
/// shutdown forever).
const SHUTDOWN_WRITE_GRACE: std::time::Duration = std::time::Duration::from_secs(5);

/// Connection ids are unique for the life of the process, across servers.
static NEXT_CONNECTION_ID: AtomicU64 = AtomicU64::new(1);

/// The listener's settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerConfig {
    /// Address to listen on; port 0 picks a free port ([`Server::local_addr`] tells which).
    /// Default `0.0.0.0:9092` (Kafka's `listeners=PLAINTEXT://:9092`).
    pub listen: SocketAddr,
    /// Kafka's `socket.request.max.bytes`: a request whose size prefix is above this closes the
    /// connection. Default 104857600 (100 MiB), range `1 ..= i32::MAX`.
    pub request_max_bytes: usize,
    /// Kafka's `max.connections`: most connections open at once. At the bound no connection is
    /// accepted until one closes (a new one waits in the listen backlog, answered once a slot
    /// frees, as Kafka's acceptor blocks in `waitForConnectionSlot`). Default 10000 (Kafka's is
    /// `i32::MAX`; we keep a bound because each connection is a thread), range `1 ..= i32::MAX`
    /// (Kafka takes 0 too, which on a single listener serves no one).
    pub max_connections: usize,
    /// Kafka's `max.connections.per.ip`: most connections open at once from one address (an
    /// IPv4-mapped IPv6 peer counts as its IPv4 address); one beyond it is accepted and closed
    /// at once. Checked once a slot under `max_connections` is free, as Kafka's
    /// `ConnectionQuotas.inc`. Default `i32::MAX` (Kafka's), range `0 ..= i32::MAX`; 0 only
    /// with [`max_connections_per_ip_overrides`](Self::max_connections_per_ip_overrides) (then
    /// only the hosts listed there may connect), as Kafka requires.
    pub max_connections_per_ip: usize,
    /// Kafka's `max.connections.per.ip.overrides`: `(host, most connections)` pairs overriding
    /// `max_connections_per_ip` for a host name or address (characters `[0-9a-zA-Z-%._:]`, as
    /// Kafka's `Utils.validHostPattern`). A name is resolved once, by [`Server::bind`], and
    /// covers every address it resolves to (Kafka's `InetAddress.getByName` takes the first);
    /// one that does not resolve fails the bind. A count below 1 refuses every connection from
    /// that host. Default empty. [`ServerConfig::parse_per_ip_overrides`] reads Kafka's
    /// `host:count,host:count` form.
    pub max_connections_per_ip_overrides: Vec<(String, i32)>,
    /// Kafka's `connections.max.idle.ms`: a connection that sends nothing for this long while
    /// the broker waits for its next request (or the rest of one), or that reads nothing of a
    /// response being written for this long, is closed, so silent, half-sent or unread
    /// connections cannot hold every slot of `max_connections`. Default 600000
    /// (10 minutes, Kafka's), range `1 ..= i64::MAX`, or
    /// [`IDLE_TIMEOUT_NEVER`](Self::IDLE_TIMEOUT_NEVER) (Kafka's negative values): idle
    /// connections are never closed.
    pub idle_timeout_ms: u64,
}

impl ServerConfig {
    /// Default of [`ServerConfig::request_max_bytes`].
    pub const DEFAULT_REQUEST_MAX_BYTES: usize = 104_857_600;
    /// Default of [`ServerConfig::max_connections`].
    pub const DEFAULT_MAX_CONNECTIONS: usize = 10_000;
    /// Default of [`ServerConfig::max_connections_per_ip`] (Kafka's).
    pub const DEFAULT_MAX_CONNECTIONS_PER_IP: usize = i32::MAX as usize;
    /// Default of [`ServerConfig::idle_timeout_ms`].
    pub const DEFAULT_IDLE_TIMEOUT_MS: u64 = 600_000;
    /// [`ServerConfig::idle_timeout_ms`] for "never close an idle connection" (Kafka's
    /// `connections.max.idle.ms` below 0).
    pub const IDLE_TIMEOUT_NEVER: u64 = u64::MAX;

    /// Rejects out-of-range settings with a message naming the setting.
    pub fn validate(&self) -> io::Result<()> {
        let max = i32::MAX as usize;
        if !(1..=max).contains(&self.request_max_bytes) {
            return Err(invalid_input(format!(
                "socket.request.max.bytes must be in 1..={max}, got {}",
                self.request_max_bytes
            )));
        }
        if !(1..=max).contains(&self.max_connections) {
            return Err(invalid_input(format!(
                "max.connections must be in 1..={max}, got {}",
                self.max_connections
            )));
        }
        if self.max_connections_per_ip > max {
            return Err(invalid_input(format!(
                "max.connections.per.ip must be in 0..={max}, got {}",
                self.max_connections_per_ip
            )));
        }
        // Kafka's `KafkaConfig.validateValues`, word for word.
        if self.max_connections_per_ip == 0 && self.max_connections_per_ip_overrides.is_empty() {
            return Err(invalid_input(
                "max.connections.per.ip can be set to zero only if \
                 max.connections.per.ip.overrides property is set."
                    .to_string(),
            ));
        }
        let invalid: Vec<&str> = self
            .max_connections_per_ip_overrides
            .iter()
            .map(|(host, _)| host.as_str())
            .filter(|host| !valid_host_pattern(host))
            .collect();
        if !invalid.is_empty() {
            return Err(invalid_input(format!(
                "max.connections.per.ip.overrides contains invalid addresses : {}",
                invalid.join(",")
            )));
        }
        if !(1..=i64::MAX as u64).contains(&self.idle_timeout_ms)
            && self.idle_timeout_ms != Self::IDLE_TIMEOUT_NEVER
        {
            return Err(invalid_input(format!(
                "connections.max.idle.ms must be in 1..={}, got {}",
                i64::MAX,
                self.idle_timeout_ms
            )));
        }
        Ok(())
    }

    /// Reads Kafka's `max.connections.per.ip.overrides` value: `host:count` pairs separated by
    /// commas (blanks around either separator ignored), split at a pair's last `:` so an IPv6
    /// address may stand as the host; a host given twice keeps its last count; empty: none
    /// (Kafka's `parseCsvMap` and `Integer.parseInt`). The hosts are checked by
    /// [`validate`](Self::validate).
    pub fn parse_per_ip_overrides(value: &str) -> io::Result<Vec<(String, i32)>> {
        let mut out: Vec<(String, i32)> = vec![];
        if value.is_empty() {
            return Ok(out);
        }
        let mut pairs: Vec<&str> = value.split(',').map(str::trim).collect();
        // Java's `split` drops trailing empty strings.
        while pairs.last() == Some(&"") {
            pairs.pop();
        }
        for pair in pairs {
            let bad = |why: &str| {
                invalid_input(format!(
                    "Error parsing configuration property 'max.connections.per.ip.overrides': \
                     {pair:?} {why}"
                ))
            };
            let (host, count) = pair
                .rsplit_once(':')
                .ok_or_else(|| bad("is not host:count"))?;
            let count: i32 = count
                .trim()
                .parse()
                .map_err(|_| bad("has a count that is not a 32-bit int"))?;
            let host = host.trim().to_string();
            out.retain(|(h, _)| *h != host);
            out.push((host, count));
        }
        Ok(out)
    }

    /// [`max_connections_per_ip_overrides`](Self::max_connections_per_ip_overrides) in Kafka's
    /// `host:count,host:count` form.
    pub fn per_ip_overrides_value(&self) -> String {
        let pairs: Vec<String> = self
            .max_connections_per_ip_overrides
            .iter()
            .map(|(host, count)| format!("{host}:{count}"))
            .collect();
        pairs.join(",")
    }
}

/// Kafka's `Utils.validHostPattern`: only `[0-9a-zA-Z-%._:]`, possibly none.
fn valid_host_pattern(host: &str) -> bool {
    host.chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '%' | '.' | '_' | ':'))
}

/// [`ServerConfig::max_connections_per_ip_overrides`] resolved to addresses (canonical: an
/// IPv4-mapped IPv6 address as its IPv4 one); a later pair wins over an earlier one for the same
/// address.
fn resolve_per_ip_overrides(overrides: &[(String, i32)]) -> io::Result<HashMap<IpAddr, i32>> {
    let mut out = HashMap::new();
    for (host, count) in overrides {
        let addrs = (host.as_str(), 0).to_socket_addrs().map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("max.connections.per.ip.overrides: cannot resolve {host:?}: {e}"),
            )
        })?;
        for a in addrs {
            out.insert(a.ip().to_canonical(), *count);
        }
    }
    Ok(out)
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            listen: SocketAddr::from(([0, 0, 0, 0], 9092)),
            request_max_bytes: Self::DEFAULT_REQUEST_MAX_BYTES,
            max_connections: Self::DEFAULT_MAX_CONNECTIONS,
            max_connections_per_ip: Self::DEFAULT_MAX_CONNECTIONS_PER_IP,
            max_connections_per_ip_overrides: vec![],
            idle_timeout_ms: Self::DEFAULT_IDLE_TIMEOUT_MS,
        }
    }
}

fn invalid_input(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, msg)
}

/// A bound Kafka-protocol listener; [`Server::run`] serves it.
pub struct Server {
    config: ServerConfig,
    local_addr: SocketAddr,
    /// Taken by `run`, which closes it when it stops accepting.
    listener: Mutex<Option<TcpListener>>,
    /// Readable once shutdown was requested.
    wake_rx: UnixStream,
    handler: Arc<dyn Handler>,
    shared: Arc<Shared>,
    /// `max_connections_per_ip_overrides`, resolved at bind.
    per_ip_overrides: HashMap<IpAddr, i32>,
}

impl fmt::Debug for Server {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Server")
            .field("config", &self.config)
            .field("local_addr", &self.local_addr)
            .field("stopping", &self.shared.is_stopping())
            .finish_non_exhaustive()
    }
}

/// What the server, its connection threads and its shutdown handles share.
struct Shared {
    /// Mirrors `Registry::stopping` for lock-free checks; set under the registry lock.
    stopping: AtomicBool,
    registry: Mutex<Registry>,
    /// Signalled when the last connection leaves the registry.
    drained: Condvar,
    /// Signalled when any connection leaves the registry, and on shutdown: wakes the accept
    /// loop waiting for a slot under `max_connections`.
    slot_freed: Condvar,
    /// Whether the accept loop is waiting for a slot, a connection pending in the backlog
    /// ([`ListenerState::waiting_for_slot`]).
    waiting_for_slot: AtomicBool,
    /// Written once on shutdown to wake the accept loop (non-blocking).
    wake_tx: UnixStream,
}

#[derive(Default)]
struct Registry {
    stopping: bool,
    /// A clone of every open connection's socket, to shut it down from the shutdown path.
    connections: HashMap<u64, TcpStream>,
    /// Open connections per peer address (canonical), for `max_connections_per_ip`.
    per_ip: HashMap<IpAddr, usize>,
}

impl Shared {
    fn is_stopping(&self) -> bool {
        self.stopping.load(Ordering::Acquire)
    }
}

/// Stops a [`Server`] from another thread. Cheap to clone.
#[derive(Clone)]
pub struct ShutdownHandle {
    shared: Arc<Shared>,
}

impl fmt::Debug for ShutdownHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ShutdownHandle")
            .field("stopping", &self.is_shutdown())
            .finish()
    }
}

impl ShutdownHandle {
    /// Stops the server gracefully: no new connection is accepted, every connection waiting for
    /// its next request is closed, and a request being handled finishes and is answered before
    /// its connection closes. Returns at once; [`Server::run`] returns when all that is done.
    /// Calling it again does nothing.
    pub fn shutdown(&self) {
        {
            let mut reg = self.shared.registry.lock();
            if reg.stopping {
                return;
            }
            reg.stopping = true;
            self.shared.stopping.store(true, Ordering::Release);
            self.shared.slot_freed.notify_all();
            for stream in reg.connections.values() {
                // Wakes a reader blocked on the next request; the write half stays open for an
                // in-flight response. An error means the connection is already gone.
                let _ = stream.shutdown(Shutdown::Read);
            }
        }
        // Non-blocking: if the buffer were full the accept loop would already be awake.
        let _ = (&self.shared.wake_tx).write(&[1]);
        info!("server shutdown requested");
    }

    /// Whether shutdown was requested.
    pub fn is_shutdown(&self) -> bool {
        self.shared.is_stopping()
    }
}

/// Reads a [`Server`]'s state from another thread ([`Server::state`]). Cheap to clone.
#[derive(Clone)]
pub struct ListenerState {
    shared: Arc<Shared>,
}

impl fmt::Debug for ListenerState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ListenerState")
            .field("open_connections", &self.open_connections())
            .field("waiting_for_slot", &self.waiting_for_slot())
            .finish()
    }
}

impl ListenerState {
    /// Connections open now.
    pub fn open_connections(&self) -> usize {
        self.shared.registry.lock().connections.len()
    }

    /// Whether the accept loop is waiting for a connection to close, `max_connections` being
    /// open while another connection is pending: until this turns false, that connection is
    /// not accepted, and none of its requests is read.
    pub fn waiting_for_slot(&self) -> bool {
        self.shared.waiting_for_slot.load(Ordering::Acquire)
    }
}

impl Server {
    /// Validates `config` and binds its address (port 0 allowed: the real address is returned by
    /// [`Server::local_addr`]). Nothing is accepted until [`Server::run`].
    pub fn bind(config: ServerConfig, handler: Arc<dyn Handler>) -> io::Result<Server> {
        config.validate()?;
        let per_ip_overrides = resolve_per_ip_overrides(&config.max_connections_per_ip_overrides)?;
        let listener = TcpListener::bind(config.listen)?;
        listener.set_nonblocking(true)?;
        let local_addr = listener.local_addr()?;
        let (wake_tx, wake_rx) = UnixStream::pair()?;
        wake_tx.set_nonblocking(true)?;
        let shared = Arc::new(Shared {
            stopping: AtomicBool::new(false),
            registry: Mutex::new(Registry::default()),
            drained: Condvar::new(),
            slot_freed: Condvar::new(),
            waiting_for_slot: AtomicBool::new(false),
            wake_tx,
        });
        debug!(%local_addr, "listener bound");
        Ok(Server {
            config,
            local_addr,
            listener: Mutex::new(Some(listener)),
            wake_rx,
            handler,
            shared,
            per_ip_overrides,
        })
    }

    /// The address the listener is bound to.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// A handle that stops this server from another thread (or a signal, through
    /// [`super::shutdown_on_signals`]).
    pub fn shutdown_handle(&self) -> ShutdownHandle {
        ShutdownHandle {
            shared: self.shared.clone(),
        }
    }

    /// A handle that reads the listener's state from another thread.
    pub fn state(&self) -> ListenerState {
        ListenerState {
            shared: self.shared.clone(),
        }
    }

    /// Serves until shutdown is requested: accepts connections, one thread each (bounded by
    /// `max_connections`), reads their requests and answers them in order. Then closes the
    /// listening socket and returns once every connection thread has finished its in-flight
    /// request and exited — by then no connection thread holds the handler any more.
    ///
    /// Returns an error if the listening socket fails for good (the connections are then shut
    /// down and drained as well), or if `run` was already called.
    pub fn run(&self) -> io::Result<()> {
        let listener = self.listener.lock().take().ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "Server::run was already called",
            )
        })?;
        info!(addr = %self.local_addr, "serving");
        let result = self.accept_loop(&listener);
        // Refuse new connections while the open ones drain.
        drop(listener);
        if let Err(e) = &result {
            error!(error = %e, "listener failed; shutting down");
            self.shutdown_handle().shutdown();
        }
        let mut reg = self.shared.registry.lock();
        let grace_end = std::time::Instant::now() + SHUTDOWN_WRITE_GRACE;
        let mut forced = false;
        while !reg.connections.is_empty() {
            debug!(
                open = reg.connections.len(),
                "waiting for connections to finish"
            );
            if forced {
                self.shared.drained.wait(&mut reg);
            } else if self
                .shared
                .drained
                .wait_until(&mut reg, grace_end)
                .timed_out()
                && !reg.connections.is_empty()
            {
                // A peer that does not read its responses would block a writer forever:
                // closing both halves fails that write, and the connection thread ends.
                warn!(
                    open = reg.connections.len(),
                    "connections still open {} s after shutdown; closing them",
                    SHUTDOWN_WRITE_GRACE.as_secs()
                );
                for stream in reg.connections.values() {
                    let _ = stream.shutdown(Shutdown::Both);
                }
                forced = true;
            }
        }
        drop(reg);
        info!("server stopped");
        result
    }

    fn accept_loop(&self, listener: &TcpListener) -> io::Result<()> {
        let fds = [listener.as_raw_fd(), self.wake_rx.as_raw_fd()];
        loop {
            if self.shared.is_stopping() {
                return Ok(());
            }
            // A connection is pending (or shutdown was requested): one poll per accept, so
            // that the loop waits for a slot only with a connection to admit.
            wait_readable(&fds, -1)?;
            if !self.wait_for_connection_slot() {
                return Ok(());
            }
            match listener.accept() {
                Ok((stream, peer)) => self.admit(stream, peer),
                Err(e) => match classify_accept_error(&e) {
                    AcceptError::Drained => {}
                    AcceptError::Retry => debug!(error = %e, "accept failed; retrying"),
                    AcceptError::Backoff => {
                        warn!(error = %e, "accept failed; pausing {ACCEPT_BACKOFF_MS} ms");
                        wait_readable(&fds[1..], ACCEPT_BACKOFF_MS)?;
                    }
                    AcceptError::Fatal => return Err(e),
                },
            }
        }
    }

    /// Kafka's `ConnectionQuotas.waitForConnectionSlot`: with `max_connections` open, accepts
    /// nothing until one closes — the pending connection waits in the listen backlog (the
    /// kernel has completed its handshake; its requests wait unanswered). Returns false when
    /// shutdown was requested.
    fn wait_for_connection_slot(&self) -> bool {
        let mut reg = self.shared.registry.lock();
        if !reg.stopping && reg.connections.len() >= self.config.max_connections {
            debug!(
                max_connections = self.config.max_connections,
                "max.connections reached; accepting again once a connection closes"
            );
            self.shared.waiting_for_slot.store(true, Ordering::Release);
            while !reg.stopping && reg.connections.len() >= self.config.max_connections {
                self.shared.slot_freed.wait(&mut reg);
            }
            self.shared.waiting_for_slot.store(false, Ordering::Release);
        }
        !reg.stopping
    }

    /// Registers an accepted connection and starts its thread, or closes it.
    fn admit(&self, stream: TcpStream, peer: SocketAddr) {
        let id = NEXT_CONNECTION_ID.fetch_add(1, Ordering::Relaxed);
        if let Err(e) = configure_accepted(&stream, self.config.idle_timeout_ms) {
            warn!(connection_id = id, %peer, error = %e, "cannot configure connection; closing it");
            return;
        }
        let registered = match stream.try_clone() {
            Ok(s) => s,
            Err(e) => {
                warn!(connection_id = id, %peer, error = %e, "cannot clone connection; closing it");
                return;
            }
        };
        let ip = peer.ip().to_canonical();
        {
            let mut reg = self.shared.registry.lock();
            if reg.stopping {
                return;
            }
            // Only this loop registers, and it waited for a slot just before accepting.
            debug_assert!(reg.connections.len() < self.config.max_connections);
            // Kafka's `ConnectionQuotas.inc`: the address's count before this connection
            // against its override, else `max.connections.per.ip`.
            let max = self
                .per_ip_overrides
                .get(&ip)
                .map_or(self.config.max_connections_per_ip as i64, |&n| i64::from(n));
            let open = reg.per_ip.get(&ip).copied().unwrap_or(0);
            if open as i64 >= max {
                info!(
                    connection_id = id,
                    %peer,
                    "Rejected connection from {ip}, address already has the configured maximum \
                     of {max} connections."
                );
                return;
            }
            reg.connections.insert(id, registered);
            *reg.per_ip.entry(ip).or_insert(0) += 1;
        }
        let registration = Registration {
            shared: self.shared.clone(),
            id,
            ip,
        };
        let conn = Connection {
            id,
            peer,
            stream,
            handler: self.handler.clone(),
            request_max_bytes: self.config.request_max_bytes,
        };
        let spawned = std::thread::Builder::new()
            .name(format!("mirrorlog-conn-{id}"))
            .spawn(move || {
                // Declared first, dropped last: the connection and its handler reference are gone
                // before `run` can see the registry empty.
                let registration = registration;
                conn.serve(&registration.shared);
            });
        if let Err(e) = spawned {
            // The closure, with the registration, was dropped: the connection is deregistered.
            warn!(connection_id = id, %peer, error = %e, "cannot start connection thread; closing it");
        }
    }
}

/// Removes its connection from the registry when the connection thread ends, however it ends.
struct Registration {
    shared: Arc<Shared>,
    id: u64,
    /// The peer's address, canonical.
    ip: IpAddr,
}

impl Drop for Registration {
    fn drop(&mut self) {
        let mut reg = self.shared.registry.lock();
        reg.connections.remove(&self.id);
        match reg.per_ip.get_mut(&self.ip) {
            Some(n) if *n > 1 => *n -= 1,
            _ => {
                reg.per_ip.remove(&self.ip);
            }
        }
        self.shared.slot_freed.notify_all();
        if reg.connections.is_empty() {
            self.shared.drained.notify_all();
        }
    }
}

/// One accepted connection, served by its own thread.
struct Connection {
    id: u64,
    peer: SocketAddr,
    stream: TcpStream,
    handler: Arc<dyn Handler>,
    request_max_bytes: usize,
}

/// A response on its way to the writer thread.
struct Outgoing {
    correlation_id: i32,
    api_key: ApiKey,
    version: i16,
    body: Body,
}

// Moved once per request; boxing the response would cost an allocation each time.
#[allow(clippy::large_enum_variant)]
enum Body {
    Ready(ResponseKind),
    /// Finished just before it is sent ([`Reply::Later`]): by the writer thread, in order, or by
    /// the reading thread when nothing waits before it and nothing follows it yet.
    Pending(Box<dyn FnOnce() -> ResponseKind + Send>),
    /// A whole response frame, already encoded (the mirror RPCs, which `kafka-protocol` cannot
    /// encode).
    Encoded(bytes::Bytes),
}

/// What handling one request gave.
// Moved once per request; boxing the response would cost an allocation each time.
#[allow(clippy::large_enum_variant)]
enum Answer {
    /// Nothing to send (acks=0).
    Nothing,
    Send(Outgoing),
    /// Close the connection.
    Close,
}

impl Connection {
    fn serve(self, shared: &Shared) {
        let (id, peer) = (self.id, self.peer);
        debug!(connection_id = id, %peer, "connection opened");
        // Responses handed to the writer thread and not yet written. While it is 0 the reading
        // thread writes its answers itself (no hand-off on the common path); otherwise they queue
        // behind the waiting ones so the order holds.
        let queued = AtomicUsize::new(0);
        let (tx, rx) = sync_channel::<Outgoing>(MAX_PENDING_RESPONSES);
        std::thread::scope(|s| {
            s.spawn(|| self.write_queued(rx, &queued));
            self.read_requests(shared, tx, &queued);
            // Dropping `tx` lets the writer send what is queued and end; the scope waits for it.
        });
    }

    fn read_requests(&self, shared: &Shared, tx: SyncSender<Outgoing>, queued: &AtomicUsize) {
        let (id, peer) = (self.id, self.peer);
        let mut reader = BufReader::with_capacity(READ_BUFFER_BYTES, &self.stream);
        loop {
            if shared.is_stopping() {
                debug!(connection_id = id, %peer, "closing connection for shutdown");
                break;
            }
            let frame = match frame::read_frame(&mut reader, self.request_max_bytes) {
                Ok(Some(frame)) => frame,
                Ok(None) => {
                    debug!(connection_id = id, %peer, "connection closed by peer");
                    break;
                }
                Err(
                    e @ (ReadFrameError::NegativeSize { .. } | ReadFrameError::TooLarge { .. }),
                ) => {
                    warn!(connection_id = id, %peer, error = %e, "closing connection");
                    break;
                }
                Err(ReadFrameError::Io(e))
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) =>
                {
                    info!(connection_id = id, %peer, "closing connection: nothing received for connections.max.idle.ms");
                    break;
                }
                Err(e) => {
                    debug!(connection_id = id, %peer, error = %ErrorChain(&e), "connection lost");
                    break;
                }
            };
            let out = match self.answer(frame) {
                Answer::Nothing => continue,
                Answer::Close => break,
                Answer::Send(out) => out,
            };
            // Nothing waits in the writer's queue: answer here, without a hand-off. A pending
            // answer (acks=all: it waits for a sync) is finished here too when no further
            // request has arrived, buffered or on the socket; otherwise the writer finishes it
            // while this thread appends the requests behind it, so one sync can cover them.
            let direct = queued.load(Ordering::Acquire) == 0
                && match out.body {
                    Body::Ready(_) | Body::Encoded(_) => true,
                    Body::Pending(_) => {
                        reader.buffer().is_empty() && !bytes_waiting(self.stream.as_raw_fd())
                    }
                };
            if direct {
                if !self.send(out) {
                    break;
                }
                continue;
            }
            queued.fetch_add(1, Ordering::AcqRel);
            if tx.send(out).is_err() {
                // The writer stopped: the connection is broken.
                break;
            }
        }
    }

    /// The writer thread: sends queued responses in order, waiting for each pending one.
    fn write_queued(&self, rx: Receiver<Outgoing>, queued: &AtomicUsize) {
        for out in rx {
            let ok = self.send(out);
            queued.fetch_sub(1, Ordering::AcqRel);
            if !ok {
                // Wake the reading thread (blocked on the socket) so the connection closes.
                let _ = self.stream.shutdown(Shutdown::Both);
                return;
            }
        }
    }

    /// Finishes, encodes and writes one response. Returns whether to keep the connection open.
    fn send(&self, out: Outgoing) -> bool {
        let (id, peer) = (self.id, self.peer);
        let response = match out.body {
            Body::Encoded(bytes) => {
                return self.wrote((&self.stream).write_all(&bytes));
            }
            Body::Ready(r) => r,
            Body::Pending(finish) => match catch_unwind(AssertUnwindSafe(finish)) {
                Ok(r) => r,
                Err(panic) => {
                    error!(
                        connection_id = id,
                        %peer,
                        api_key = ?out.api_key,
                        correlation_id = out.correlation_id,
                        panic = panic_message(&*panic),
                        "handler panicked finishing a response; closing connection"
                    );
                    return false;
                }
            },
        };
        if let ResponseKind::Fetch(fetch) = &response {
            // Record bytes go out from the buffers they were read into, not copied again.
            let pieces = match frame::encode_fetch_response_pieces(
                out.correlation_id,
                out.version,
                fetch,
            ) {
                Ok(pieces) => pieces,
                Err(e) => {
                    error!(connection_id = id, %peer, error = %ErrorChain(&e), "closing connection");
                    return false;
                }
            };
            return self.wrote(frame::write_all_pieces(&self.stream, &pieces));
        }
        let bytes = match frame::encode_response(
            out.correlation_id,
            out.api_key,
            out.version,
            &response,
        ) {
            Ok(bytes) => bytes,
            Err(e) => {
                error!(connection_id = id, %peer, error = %ErrorChain(&e), "closing connection");
                return false;
            }
        };
        self.wrote((&self.stream).write_all(&bytes))
    }

    /// Whether a response write succeeded; a failure is logged (at `info` when the peer read
    /// nothing for `connections.max.idle.ms`, as a silent peer is) and closes the connection.
    fn wrote(&self, written: io::Result<()>) -> bool {
        let (id, peer) = (self.id, self.peer);
        match written {
            Ok(()) => true,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                info!(connection_id = id, %peer, "closing connection: the peer read nothing of its response for connections.max.idle.ms");
                false
            }
            Err(e) => {
                debug!(connection_id = id, %peer, error = %e, "cannot write response; closing");
                false
            }
        }
    }

    /// Decodes and handles one request.
    fn answer(&self, frame: bytes::Bytes) -> Answer {
        let (id, peer) = (self.id, self.peer);
        let handler = &*self.handler;
        let decoded = catch_unwind(AssertUnwindSafe(|| {
            frame::decode_request_with_mirror(frame, &|k| handler.supported_versions(k), &|k| {
                handler.mirror_versions(k)
            })
        }));
        let (correlation_id, api_key, version, body) = match decoded {
            Err(panic) => {
                error!(
                    connection_id = id,
                    %peer,
                    panic = panic_message(&*panic),
                    "request decoding panicked; closing connection"
                );
                return Answer::Close;
            }
            Ok(Err(e)) => {
                warn!(connection_id = id, %peer, error = %ErrorChain(&e), "closing connection");
                return Answer::Close;
            }
            Ok(Ok(Decoded::Answer(a))) => {
                (a.correlation_id, a.api_key, a.version, Body::Ready(a.body))
            }
            Ok(Ok(Decoded::Mirror {
                header,
                api_key,
                request,
            })) => {
                let ctx = MirrorRequestContext {
                    peer,
                    connection_id: id,
                    client_id: header.client_id.as_ref().map(|s| s.to_string()),
                    api_key,
                    correlation_id: header.correlation_id,
                };
                let handled =
                    catch_unwind(AssertUnwindSafe(|| handler.handle_mirror(&ctx, request)));
                return match handled {
                    Ok(Some(response)) => Answer::Send(Outgoing {
                        correlation_id: header.correlation_id,
                        // Read only to encode a `ResponseKind`; an encoded body skips that.
                        api_key: ApiKey::ApiVersions,
                        version: 0,
                        body: Body::Encoded(response.to_frame(header.correlation_id)),
                    }),
                    Ok(None) => {
                        warn!(connection_id = id, %peer, ?api_key, "no handler for a mirror RPC; closing connection");
                        Answer::Close
                    }
                    Err(panic) => {
                        error!(
                            connection_id = id,
                            %peer,
                            ?api_key,
                            correlation_id = header.correlation_id,
                            panic = panic_message(&*panic),
                            "mirror RPC handler panicked; closing connection"
                        );
                        Answer::Close
                    }
                };
            }
            Ok(Ok(Decoded::Request {
                header,
                api_key,
                request,
            })) => {
                let (correlation_id, version) = (header.correlation_id, header.request_api_version);
                let body = match self.handle(&header, api_key, request) {
                    Ok(Reply::Now(response)) => Body::Ready(response),
                    Ok(Reply::None) => return Answer::Nothing,
                    Ok(Reply::Close) => {
                        info!(
                            connection_id = id,
                            %peer,
                            ?api_key,
                            correlation_id,
                            "request failed and has no response (acks=0); closing connection"
                        );
                        return Answer::Close;
                    }
                    Ok(Reply::Later(finish)) => Body::Pending(finish),
                    Err(panic) => {
                        error!(
                            connection_id = id,
                            %peer,
                            ?api_key,
                            api_version = version,
                            correlation_id,
                            panic = panic_message(&*panic),
                            "handler panicked; closing connection"
                        );
                        return Answer::Close;
                    }
                };
                (correlation_id, api_key, version, body)
            }
        };
        Answer::Send(Outgoing {
            correlation_id,
            api_key,
            version,
            body,
        })
    }

    fn handle(
        &self,
        header: &RequestHeader,
        api_key: ApiKey,
        request: RequestKind,
    ) -> Result<Reply, Box<dyn Any + Send>> {
        let ctx = RequestContext {
            peer: self.peer,
            connection_id: self.id,
            client_id: header.client_id.as_ref().map(|s| s.to_string()),
            api_key,
            api_version: header.request_api_version,
            correlation_id: header.correlation_id,
        };
        let handler = &*self.handler;
        catch_unwind(AssertUnwindSafe(|| {
            handler.handle_pipelined(&ctx, header, request)
        }))
    }
}

fn panic_message(panic: &(dyn Any + Send)) -> &str {
    if let Some(s) = panic.downcast_ref::<&'static str>() {
        s
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s
    } else {
        "<non-string panic payload>"
    }
}

/// Whether the socket has bytes waiting to be read (`FIONREAD`); on error, yes (the caller then
/// hands its answer to the writer thread, the path that is right either way).
fn bytes_waiting(fd: RawFd) -> bool {
    let mut n: libc::c_int = 0;
    // SAFETY: FIONREAD writes one int through the pointer; `fd` is the connection's open socket.
    let rc = unsafe { libc::ioctl(fd, libc::FIONREAD, &mut n) };
    rc != 0 || n > 0
}

/// Blocking reads and writes that give up after `idle_timeout_ms` without a byte moved
/// (`connections.max.idle.ms`: the read or write fails, and the connection closes with the reason
/// logged), `TCP_NODELAY` (responses
/// are written whole, so Nagle only adds latency) and `SO_KEEPALIVE` (as Kafka sets on accepted
/// sockets, so dead idle peers are eventually noticed).
fn configure_accepted(stream: &TcpStream, idle_timeout_ms: u64) -> io::Result<()> {
    // Accepted sockets do not inherit O_NONBLOCK on Linux, but other systems differ.
    stream.set_nonblocking(false)?;
    let idle = (idle_timeout_ms != ServerConfig::IDLE_TIMEOUT_NEVER)
        .then(|| std::time::Duration::from_millis(idle_timeout_ms.max(1)));
    stream.set_read_timeout(idle)?;
    // A peer that stops reading leaves a response write with no progress: as idle as one that
    // sends nothing (Kafka's selector sees no activity on such a channel and expires it too).
    stream.set_write_timeout(idle)?;
    stream.set_nodelay(true)?;
    let on: libc::c_int = 1;
    // SAFETY: the fd is an open socket owned by `stream` for the duration of the call, and the
    // option value points to a live c_int whose size is passed alongside.
    let rc = unsafe {
        libc::setsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_KEEPALIVE,
            (&on as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

enum AcceptError {
    /// No more pending connections.
    Drained,
    /// A connection failed before we got it; try the next one.
    Retry,
    /// Out of descriptors or memory: wait for connections to close.
    Backoff,
    /// The listening socket itself is broken.
    Fatal,
}

fn classify_accept_error(e: &io::Error) -> AcceptError {
    match e.kind() {
        io::ErrorKind::WouldBlock => return AcceptError::Drained,
        io::ErrorKind::Interrupted
        | io::ErrorKind::ConnectionAborted
        | io::ErrorKind::ConnectionReset => return AcceptError::Retry,
        _ => {}
    }
    match e.raw_os_error() {
        Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM) => AcceptError::Backoff,
        Some(libc::EBADF | libc::EINVAL | libc::ENOTSOCK | libc::EFAULT) => AcceptError::Fatal,
        // accept(2) on Linux: pending network errors of the new connection (EPROTO, ENETDOWN,
        // EHOSTUNREACH, …) and firewall refusals (EPERM) are to be treated as "try again".
        _ => AcceptError::Retry,
    }
}

/// Waits until one of `fds` is readable (or has an error or hang-up), or `timeout_ms` passes
/// (-1: no timeout).
fn wait_readable(fds: &[RawFd], timeout_ms: i32) -> io::Result<()> {
    let mut pollfds: Vec<libc::pollfd> = fds
        .iter()
        .map(|&fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    loop {
        // SAFETY: `pollfds` is a live, exclusively borrowed array of `pollfds.len()` entries, and
        // each fd is open for the duration of the call (owned by the caller).
        let rc = unsafe {
            libc::poll(
                pollfds.as_mut_ptr(),
                pollfds.len() as libc::nfds_t,
                timeout_ms,
            )
        };
        if rc >= 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_config_is_valid_and_matches_kafka() {
        let c = ServerConfig::default();
        c.validate().unwrap();
        assert_eq!(c.request_max_bytes, 104_857_600);
        assert_eq!(c.listen.port(), 9092);
    }

    #[test]
    fn out_of_range_config_is_rejected_with_its_name() {
        let base = ServerConfig::default();
        for (c, name) in [
            (
                ServerConfig {
                    request_max_bytes: 0,
                    ..base.clone()
                },
                "socket.request.max.bytes",
            ),
            (
                ServerConfig {
                    request_max_bytes: i32::MAX as usize + 1,
                    ..base.clone()
                },
                "socket.request.max.bytes",
            ),
            (
                ServerConfig {
                    max_connections: 0,
                    ..base.clone()
                },
                "max.connections",
            ),
            (
                ServerConfig {
                    max_connections_per_ip: i32::MAX as usize + 1,
                    ..base.clone()
                },
                "max.connections.per.ip",
            ),
            (
                ServerConfig {
                    max_connections_per_ip_overrides: vec![("a/b".into(), 1)],
                    ..base.clone()
                },
                "max.connections.per.ip.overrides contains invalid addresses : a/b",
            ),
            (
                ServerConfig {
                    idle_timeout_ms: 0,
                    ..base.clone()
                },
                "connections.max.idle.ms",
            ),
        ] {
            let e = c.validate().unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
            assert!(e.to_string().contains(name), "{e}");
        }
    }

    #[test]
    fn max_connections_per_ip_zero_needs_overrides_as_kafka() {
        let zero = ServerConfig {
            max_connections_per_ip: 0,
            ..ServerConfig::default()
        };
        let e = zero.validate().unwrap_err();
        assert_eq!(
            e.to_string(),
            "max.connections.per.ip can be set to zero only if \
             max.connections.per.ip.overrides property is set."
        );
        ServerConfig {
            max_connections_per_ip_overrides: vec![("127.0.0.1".into(), 2)],
            ..zero
        }
        .validate()
        .unwrap();
    }

    #[test]
    fn per_ip_overrides_parse_as_kafkas_csv_map() {
        let parse = ServerConfig::parse_per_ip_overrides;
        assert!(parse("").unwrap().is_empty());
        assert_eq!(
            parse("hostName:100, 127.0.0.1 : 200 ,::1:3,hostName:-1,").unwrap(),
            vec![
                ("127.0.0.1".to_string(), 200),
                ("::1".to_string(), 3),
                ("hostName".to_string(), -1),
            ]
        );
        for bad in [
            "127.0.0.1",
            "127.0.0.1:not_a_number",
            "a:1,,b:2",
            "a:3000000000",
        ] {
            let e = parse(bad).unwrap_err();
            assert!(
                e.to_string().contains("max.connections.per.ip.overrides"),
                "{e}"
            );
        }
        let c = ServerConfig {
            max_connections_per_ip_overrides: parse("a:1,::1:2").unwrap(),
            ..ServerConfig::default()
        };
        assert_eq!(c.per_ip_overrides_value(), "a:1,::1:2");
    }

    #[test]
    fn per_ip_overrides_resolve_to_canonical_addresses_and_an_unknown_host_fails() {
        let m = resolve_per_ip_overrides(&[
            ("::ffff:10.0.0.1".into(), 4),
            ("127.0.0.1".into(), 1),
            ("127.0.0.1".into(), 2),
        ])
        .unwrap();
        assert_eq!(m.get(&IpAddr::from([10, 0, 0, 1])), Some(&4));
        assert_eq!(m.get(&IpAddr::from([127, 0, 0, 1])), Some(&2));
        let e = resolve_per_ip_overrides(&[("no-such-host.invalid".into(), 1)]).unwrap_err();
        assert!(e.to_string().contains("no-such-host.invalid"), "{e}");
    }

    #[test]
    fn accept_errors_are_classified() {
        let of = |errno| classify_accept_error(&io::Error::from_raw_os_error(errno));
        assert!(matches!(of(libc::EAGAIN), AcceptError::Drained));
        assert!(matches!(of(libc::ECONNABORTED), AcceptError::Retry));
        assert!(matches!(of(libc::EPROTO), AcceptError::Retry));
        assert!(matches!(of(libc::EMFILE), AcceptError::Backoff));
        assert!(matches!(of(libc::EBADF), AcceptError::Fatal));
    }
}
