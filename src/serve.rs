//! `mirrorlog serve`: the single-node Kafka-protocol broker.
//!
//! Settings come from flags and, optionally, a file in Kafka's `server.properties` format. The
//! keys we honour (the cluster, quorum, thread-pool and socket-buffer keys of Kafka's stock file,
//! [`KAFKA_KEYS_WITHOUT_EFFECT`], are ignored with a warning; anything else is rejected with its
//! name, so a typo never passes silently):
//!
//! | key | default | range |
//! |---|---|---|
//! | `node.id` | 1 | ≥ 0 |
//! | `log.dirs` (or `log.dir`) | the `--data-dir` flag | comma-separated paths |
//! | `listeners` | 127.0.0.1:9092 | the `PLAINTEXT://host:port` entry (empty host: every interface) |
//! | `advertised.listeners` | the listen address | `PLAINTEXT://host:port` |
//! | `num.partitions` | 1 | 1 ..= 100000 |
//! | `auto.create.topics.enable` | true | true/false (any case, as Kafka) |
//! | `socket.request.max.bytes` | 104857600 | 1 ..= 2147483647 |
//! | `max.connections` | 10000 (Kafka's: 2147483647; a connection is a thread here) | 1 ..= 2147483647: at the bound no connection is accepted until one closes (a new one waits in the listen backlog), as Kafka's acceptor |
//! | `max.connections.per.ip` | 2147483647 | 0 ..= 2147483647 (0 only with overrides, as Kafka): a connection beyond it from one address is accepted and closed at once |
//! | `max.connections.per.ip.overrides` | empty | `host:count,…` (Kafka's form; hosts `[0-9a-zA-Z-%._:]`, resolved at start) |
//! | `connections.max.idle.ms` | 600000 | 1 ..= i64::MAX: a connection silent this long while a request is awaited, or reading nothing of a response this long, is closed; negative: never (as Kafka) |
//! | `fetch.max.bytes` | 57671680 | 1024 ..= 2147483647: the most record bytes in one Fetch answer (its first batch may exceed it) |
//! | `max.incremental.fetch.session.cache.slots` | 1000 | 0 ..= 2147483647: the most incremental fetch sessions held (0: none) |
//! | `num.recovery.threads.per.data.dir` | 2 | 1 ..= 64: threads opening (and recovering) each data directory's logs at start, a pool per directory as Kafka's |
//! | `log.retention.check.interval.ms` | 300000 | 1 ..= i64::MAX: how often retention is applied (at the broker's 5 s upkeep) |
//! | `log.initial.task.delay.ms` | 30000 | 0 ..= i64::MAX: the first retention check's delay after start (Kafka's internal key) |
//! | `log.io.mode` | `buffered` | `buffered`, `direct` (O_DIRECT through io_uring, see README "Direct I/O") |
//! | `log.io.direct.durability` | `dsync` | `dsync`, `fdatasync` |
//! | `log.preallocate` | true | true/false (any case): written zeros ahead of synced active `.log` files (buffered mode; see README "Durable appends") |
//! | `log.*`, `message.max.bytes`, `compression.type`, … | Kafka's | see README "Topic configuration" |
//! | `group.*`, `offsets.*`, `offset.metadata.max.bytes` ([`GroupConfig::KAFKA_KEYS`]) | see [`GroupConfig`] | see [`GroupConfig`] |
//! | `transaction.*`, `transactional.id.expiration.ms` ([`TxnConfig::KAFKA_KEYS`]) | see [`TxnConfig`] | see [`TxnConfig`] |
//!
//! Flags win over the file.

use anyhow::{Context, Result, bail};
use mirrorlog_broker::broker::BrokerConfig;
use mirrorlog_broker::group::GroupConfig;
use mirrorlog_broker::loggers::Loggers;
use mirrorlog_broker::running::RunningBroker;
use mirrorlog_broker::server::{ServerConfig, shutdown_on_signals};
use mirrorlog_broker::txn::TxnConfig;
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::sync::Arc;

/// `mirrorlog serve` flags.
#[derive(Debug, Clone, clap::Args)]
pub struct ServeArgs {
    /// Data directory (Kafka's `log.dirs`). Required unless the `--config` file sets `log.dirs`
    /// or `log.dir` (this flag wins over both).
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
    /// Address to listen on (default: the file's `listeners`, else 127.0.0.1:9092).
    #[arg(long, value_name = "HOST:PORT")]
    pub listen: Option<String>,
    /// `node.id` (default: the file's `node.id` or `broker.id`, else 1; 0..=2147483647; must
    /// match the data directory's `meta.properties`).
    #[arg(long)]
    pub node_id: Option<i32>,
    /// Cluster id (default: generated once and kept in `meta.properties`).
    #[arg(long)]
    pub cluster_id: Option<String>,
    /// `host:port` advertised to clients (default: the listen address).
    #[arg(long, value_name = "HOST:PORT")]
    pub advertised_listener: Option<String>,
    /// A file in Kafka's `server.properties` format (default: none; the keys it takes, with
    /// their defaults and ranges, are in README "Running the broker"; flags win over it).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
}

/// Keys of Kafka's stock `config/server.properties` (KRaft, combined mode) that describe a
/// multi-node cluster, its controller quorum, thread pools or socket buffers — nothing a single
/// mirrorlog node has or sizes that way. They are accepted and ignored with one warning, so a
/// broker's existing file works; every other unknown key is still refused by name. (Security
/// settings are not among them: a key that would change who may connect is never ignored.)
pub const KAFKA_KEYS_WITHOUT_EFFECT: &[&str] = &[
    "process.roles",
    "controller.quorum.voters",
    "controller.quorum.bootstrap.servers",
    "controller.listener.names",
    "inter.broker.listener.name",
    "listener.security.protocol.map",
    "num.network.threads",
    "num.io.threads",
    "socket.send.buffer.bytes",
    "socket.receive.buffer.bytes",
    "offsets.topic.replication.factor",
    "transaction.state.log.replication.factor",
    "transaction.state.log.min.isr",
    "share.coordinator.state.topic.replication.factor",
    "share.coordinator.state.topic.min.isr",
    // How long a commit waits for the offsets topic's replicas; one node has none to wait for.
    "offsets.commit.timeout.ms",
];

/// The listen address when neither `--listen` nor `listeners` gives one.
const DEFAULT_LISTEN: &str = "127.0.0.1:9092";

/// The `host:port` of the `PLAINTEXT://host:port` entry of a `listeners` or
/// `advertised.listeners` value (the only security protocol served here); an empty host (Kafka:
/// every interface) becomes `empty_host`, or is an error when `None`.
fn plaintext_listener(key: &str, v: &str, empty_host: Option<&str>) -> Result<String> {
    let Some(hp) = v
        .split(',')
        .map(str::trim)
        .find_map(|l| l.strip_prefix("PLAINTEXT://"))
    else {
        bail!("{key}={v}: no PLAINTEXT://host:port listener (the only protocol served)");
    };
    let (host, port) = hp
        .rsplit_once(':')
        .with_context(|| format!("{key}={v}: {hp} is not host:port"))?;
    if host.is_empty() {
        let Some(h) = empty_host else {
            bail!("{key}={v}: the host is empty");
        };
        return Ok(format!("{h}:{port}"));
    }
    Ok(hp.to_string())
}

/// Builds the broker and server settings from flags and the optional properties file.
pub fn settings(args: &ServeArgs) -> Result<(BrokerConfig, ServerConfig)> {
    let mut props: Vec<(String, String)> = vec![];
    if let Some(path) = &args.config {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') || line.starts_with('!') {
                continue;
            }
            let Some((k, v)) = line.split_once('=') else {
                bail!(
                    "{}:{}: expected key=value, found {line:?}",
                    path.display(),
                    n + 1
                );
            };
            props.push((k.trim().to_string(), v.trim().to_string()));
        }
    }
    let mut log_dirs: Option<Vec<PathBuf>> = None;
    let mut log_dir: Option<Vec<PathBuf>> = None;
    let mut file_listen = None;
    let mut file_advertised = None;
    let mut node_id = 1;
    let mut num_partitions = 1;
    let mut auto_create = true;
    let mut request_max = 104_857_600usize;
    let mut idle_timeout_ms = ServerConfig::DEFAULT_IDLE_TIMEOUT_MS;
    let mut max_connections = ServerConfig::DEFAULT_MAX_CONNECTIONS;
    let mut max_connections_per_ip = ServerConfig::DEFAULT_MAX_CONNECTIONS_PER_IP;
    let mut max_connections_per_ip_overrides = vec![];
    let mut fetch_max = mirrorlog_broker::broker::DEFAULT_FETCH_MAX_BYTES;
    let mut fetch_session_slots = mirrorlog_broker::handlers::fetch::DEFAULT_SESSION_SLOTS;
    let mut recovery_threads = 2usize;
    let mut retention_check_interval_ms =
        mirrorlog_engine::manager::LogManagerConfig::DEFAULT_RETENTION_CHECK_INTERVAL_MS;
    let mut initial_task_delay_ms =
        mirrorlog_engine::manager::LogManagerConfig::DEFAULT_INITIAL_TASK_DELAY_MS;
    let mut io_mode = mirrorlog_engine::manager::IoMode::default();
    let mut preallocate = None;
    let mut direct_durability = None;
    let mut log_pairs = vec![];
    let mut group = GroupConfig::default();
    let mut txn = TxnConfig::default();
    let mut ignored: Vec<String> = vec![];
    let parse = |k: &str, v: &str| -> Result<i64> {
        v.parse().with_context(|| format!("{k}={v}: not a number"))
    };
    // As Kafka's `ConfigDef` BOOLEAN: `true` or `false` in any case.
    let parse_bool = |k: &str, v: &str| -> Result<bool> {
        match v.to_ascii_lowercase().as_str() {
            "true" => Ok(true),
            "false" => Ok(false),
            _ => bail!("{k}={v}: not true/false"),
        }
    };
    let parse_i32 = |k: &str, v: &str| -> Result<i32> {
        i32::try_from(parse(k, v)?).map_err(|_| anyhow::anyhow!("{k}={v}: not a 32-bit int"))
    };
    let dirs = |v: &str| Some(v.split(',').map(|d| PathBuf::from(d.trim())).collect());
    for (k, v) in &props {
        // The coordinators' keys; their ranges are checked with the rest by `validate` below.
        if group.set(k, v).map_err(anyhow::Error::msg)?
            || txn.set(k, v).map_err(anyhow::Error::msg)?
        {
            continue;
        }
        match k.as_str() {
            // As `java.util.Properties`, a repeated key's last value wins.
            "node.id" | "broker.id" => node_id = parse_i32(k, v)?,
            "log.dirs" => log_dirs = dirs(v),
            "log.dir" => log_dir = dirs(v),
            "listeners" => file_listen = Some(plaintext_listener(k, v, Some("0.0.0.0"))?),
            "advertised.listeners" => file_advertised = Some(plaintext_listener(k, v, None)?),
            "num.partitions" => num_partitions = parse_i32(k, v)?,
            "auto.create.topics.enable" => auto_create = parse_bool(k, v)?,
            "socket.request.max.bytes" => {
                request_max = match parse_i32(k, v)? {
                    n @ 1.. => n as usize,
                    _ => bail!("{k}={v}: must be at least 1"),
                }
            }
            // Kafka's INT, at least 0; 0 is refused here: on this single listener it would
            // serve no one (Kafka's only spares its inter-broker listener).
            "max.connections" => {
                max_connections = match parse_i32(k, v)? {
                    n @ 1.. => n as usize,
                    _ => bail!("{k}={v}: must be at least 1 (0 would serve no one)"),
                }
            }
            // Kafka's INT, at least 0; 0 needs overrides (checked by `ServerConfig::validate`).
            "max.connections.per.ip" => {
                max_connections_per_ip = match parse_i32(k, v)? {
                    n @ 0.. => n as usize,
                    _ => bail!("{k}={v}: must be at least 0"),
                }
            }
            "max.connections.per.ip.overrides" => {
                max_connections_per_ip_overrides = ServerConfig::parse_per_ip_overrides(v)?
            }
            "connections.max.idle.ms" => {
                idle_timeout_ms = match parse(k, v)? {
                    n @ 1.. => n as u64,
                    // As Kafka's `Selector`: a negative value turns idle expiry off.
                    ..0 => ServerConfig::IDLE_TIMEOUT_NEVER,
                    0 => bail!("{k}={v}: must be at least 1, or negative for never"),
                }
            }
            // Kafka's LONG, at least 1.
            "log.retention.check.interval.ms" => {
                retention_check_interval_ms = match parse(k, v)? {
                    n @ 1.. => n,
                    _ => bail!("{k}={v}: must be at least 1"),
                }
            }
            // Kafka's internal LONG (`defineInternal`), at least 0; its own tests set it low.
            "log.initial.task.delay.ms" => {
                initial_task_delay_ms = match parse(k, v)? {
                    n @ 0.. => n,
                    _ => bail!("{k}={v}: must be at least 0"),
                }
            }
            "num.recovery.threads.per.data.dir" => {
                recovery_threads = match parse_i32(k, v)? {
                    n @ 1..=64 => n as usize,
                    _ => bail!("{k}={v}: must be in 1..=64"),
                }
            }
            "fetch.max.bytes" => {
                fetch_max = i32::try_from(parse(k, v)?)
                    .map_err(|_| anyhow::anyhow!("{k}={v}: above 2147483647"))?
            }
            // Kafka's INT; the range (at least 0) is checked by `validate` below.
            "max.incremental.fetch.session.cache.slots" => fetch_session_slots = parse_i32(k, v)?,
            "log.io.mode" => {
                io_mode = mirrorlog_engine::manager::IoMode::parse(v).map_err(anyhow::Error::msg)?
            }
            "log.preallocate" => preallocate = Some(parse_bool(k, v)?),
            "log.io.direct.durability" => {
                direct_durability = Some(
                    mirrorlog_engine::manager::parse_direct_durability(v)
                        .map_err(anyhow::Error::msg)?,
                )
            }
            k if KAFKA_KEYS_WITHOUT_EFFECT.contains(&k) => ignored.push(k.to_string()),
            // Everything else must be a log setting the engine knows.
            _ => log_pairs.push((k.clone(), v.clone())),
        }
    }
    if !ignored.is_empty() {
        // Kafka logs its unused keys the same way ("supplied but not used").
        tracing::warn!(
            "these keys of Kafka's server.properties have no effect on a single mirrorlog node \
             and are ignored: {}",
            ignored.join(", ")
        );
    }
    if let Some(n) = args.node_id {
        node_id = n;
    }
    // Kafka: `log.dirs` wins over `log.dir`; the flag wins over both.
    let data_dirs = args
        .data_dir
        .clone()
        .map(|d| vec![d])
        .or(log_dirs)
        .or(log_dir)
        .context("no data directory: pass --data-dir or set log.dirs")?;
    let listen = args
        .listen
        .clone()
        .or(file_listen)
        .unwrap_or_else(|| DEFAULT_LISTEN.to_string());
    let advertised = args.advertised_listener.clone().or(file_advertised);
    let listen_addr: SocketAddr = listen
        .to_socket_addrs()
        .with_context(|| format!("listen address {listen}"))?
        .next()
        .with_context(|| format!("listen address {listen} resolves to nothing"))?;
    let adv = advertised.unwrap_or_else(|| listen_addr.to_string());
    let (host, port) = adv
        .rsplit_once(':')
        .with_context(|| format!("advertised listener {adv} is not host:port"))?;
    // As Kafka: clients would connect to 0.0.0.0 (their own host).
    if host
        .trim_matches(|c| c == '[' || c == ']')
        .parse::<std::net::IpAddr>()
        .is_ok_and(|ip| ip.is_unspecified())
    {
        bail!(
            "the advertised listener {adv} uses the nonroutable meta-address {host}: set \
             advertised.listeners (or --advertised-listener) to a routable host"
        );
    }
    let port: i32 = port
        .parse()
        .with_context(|| format!("advertised port in {adv}"))?;
    let mut cfg = BrokerConfig::new(&data_dirs[0], host, port);
    cfg.logs.data_dirs = data_dirs;
    cfg.logs.recovery_threads = recovery_threads;
    cfg.logs.retention_check_interval_ms = retention_check_interval_ms;
    cfg.logs.initial_task_delay_ms = initial_task_delay_ms;
    cfg.logs.io_mode = io_mode;
    if let Some(p) = preallocate {
        cfg.logs.preallocate = p;
    }
    if let Some(d) = direct_durability {
        cfg.logs.direct.durability = d;
    }
    cfg.logs.default_log_config = cfg.logs.default_log_config.with_overrides(log_pairs)?;
    cfg.node_id = node_id;
    cfg.cluster_id = args.cluster_id.clone();
    cfg.num_partitions = num_partitions;
    cfg.fetch_max_bytes = fetch_max;
    cfg.max_incremental_fetch_session_cache_slots = fetch_session_slots;
    cfg.auto_create_topics = auto_create;
    cfg.group = group;
    cfg.txn = txn;
    // What DescribeConfigs shows as STATIC_BROKER_CONFIG: the file's keys and the flags'.
    cfg.static_config = props.into_iter().collect();
    for (key, flag) in [
        ("node.id", args.node_id.map(|n| n.to_string())),
        (
            "log.dirs",
            args.data_dir.as_ref().map(|d| d.display().to_string()),
        ),
        (
            "listeners",
            args.listen.as_ref().map(|l| format!("PLAINTEXT://{l}")),
        ),
        (
            "advertised.listeners",
            args.advertised_listener
                .as_ref()
                .map(|l| format!("PLAINTEXT://{l}")),
        ),
    ] {
        if let Some(v) = flag {
            cfg.static_config.insert(key.to_string(), v);
        }
    }
    cfg.validate().map_err(anyhow::Error::msg)?;
    let server = ServerConfig {
        listen: listen_addr,
        request_max_bytes: request_max,
        max_connections,
        max_connections_per_ip,
        max_connections_per_ip_overrides,
        idle_timeout_ms,
    };
    server.validate()?;
    Ok((cfg, server))
}

/// Runs the broker until SIGTERM or SIGINT, then shuts down cleanly; its BROKER_LOGGER
/// resource reads and changes the process's log levels through `loggers`.
pub fn run(args: ServeArgs, loggers: Arc<Loggers>) -> Result<()> {
    let (cfg, server_cfg) = settings(&args)?;
    let running = RunningBroker::start_with_loggers(cfg, server_cfg, Some(loggers))?;
    tracing::info!(
        addr = %running.addr,
        cluster_id = %running.broker.cluster_id,
        node_id = running.broker.config.node_id,
        "mirrorlog broker listening"
    );
    // Before the line scripts wait for: a SIGTERM sent right after it must shut down cleanly,
    // not kill the process with the default action.
    shutdown_on_signals(running.shutdown_handle())?;
    // Tests and scripts wait for this line.
    println!("listening on {}", running.addr);
    running.wait()?;
    tracing::info!("clean shutdown");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args_with(props: &str) -> (ServeArgs, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("server.properties");
        std::fs::write(&file, props).unwrap();
        let args = ServeArgs {
            data_dir: Some(dir.path().join("data")),
            listen: None,
            node_id: None,
            cluster_id: None,
            advertised_listener: None,
            config: Some(file),
        };
        (args, dir)
    }

    #[test]
    fn log_io_mode_defaults_to_buffered_and_takes_direct_with_its_durability() {
        let (args, _d) = args_with("");
        let (cfg, _) = settings(&args).unwrap();
        assert_eq!(
            cfg.logs.io_mode,
            mirrorlog_engine::manager::IoMode::Buffered
        );
        let (args, _d) = args_with("log.io.mode=direct\nlog.io.direct.durability=fdatasync\n");
        let (cfg, _) = settings(&args).unwrap();
        assert_eq!(cfg.logs.io_mode, mirrorlog_engine::manager::IoMode::Direct);
        assert_eq!(
            cfg.logs.direct.durability,
            mirrorlog_segment::io::DirectDurability::Fdatasync
        );
    }

    #[test]
    fn log_preallocate_defaults_on_and_can_be_turned_off() {
        let (args, _d) = args_with("");
        let (cfg, _) = settings(&args).unwrap();
        assert!(cfg.logs.preallocate);
        let (args, _d) = args_with("log.preallocate=false\n");
        let (cfg, _) = settings(&args).unwrap();
        assert!(!cfg.logs.preallocate);
        let (args, _d) = args_with("log.preallocate=maybe\n");
        let e = format!("{:#}", settings(&args).unwrap_err());
        assert!(e.contains("log.preallocate=maybe"), "{e}");
    }

    #[test]
    fn fetch_max_bytes_defaults_to_kafkas_and_is_bounded() {
        let (args, _d) = args_with("");
        let (cfg, _) = settings(&args).unwrap();
        assert_eq!(cfg.fetch_max_bytes, 57_671_680);
        let (args, _d) = args_with("fetch.max.bytes=1048576\n");
        assert_eq!(settings(&args).unwrap().0.fetch_max_bytes, 1 << 20);
        for bad in ["1023", "4294967296"] {
            let (args, _d) = args_with(&format!("fetch.max.bytes={bad}\n"));
            let e = format!("{:#}", settings(&args).unwrap_err());
            assert!(e.contains("fetch.max.bytes"), "{e}");
        }
    }

    #[test]
    fn coordinator_keys_default_to_kafkas_values() {
        let (args, _d) = args_with("");
        let (cfg, _) = settings(&args).unwrap();
        assert_eq!(cfg.group, GroupConfig::default());
        assert_eq!(cfg.txn, TxnConfig::default());
        // Kafka's defaults (mirrorlog's own where README says why: 8 partitions, no initial
        // rebalance delay, 10000 members).
        let g = &cfg.group;
        assert_eq!(
            (
                g.offsets_topic_partitions,
                g.offsets_topic_segment_bytes,
                g.group_min_session_timeout_ms,
                g.group_max_session_timeout_ms,
                g.group_initial_rebalance_delay_ms,
                g.group_max_size,
                g.offsets_retention_minutes,
                g.offsets_retention_check_interval_ms,
                g.offset_metadata_max_bytes,
                g.offsets_load_buffer_bytes,
            ),
            (
                8,
                104_857_600,
                6000,
                1_800_000,
                0,
                10_000,
                10_080,
                600_000,
                4096,
                5_242_880
            )
        );
        let t = &cfg.txn;
        assert_eq!(
            (
                t.transaction_state_partitions,
                t.transaction_state_segment_bytes,
                t.transaction_max_timeout_ms,
                t.transactional_id_expiration_ms,
                t.abort_timed_out_transaction_cleanup_interval_ms,
                t.remove_expired_transaction_cleanup_interval_ms,
            ),
            (8, 104_857_600, 900_000, 604_800_000, 10_000, 3_600_000)
        );
    }

    #[test]
    fn every_coordinator_key_is_set_from_the_file() {
        let (args, _d) = args_with(
            "offsets.topic.num.partitions=3\n\
             offsets.topic.segment.bytes=2097152\n\
             group.min.session.timeout.ms=1000\n\
             group.max.session.timeout.ms=20000\n\
             group.initial.rebalance.delay.ms=3000\n\
             group.max.size=7\n\
             offsets.retention.minutes=60\n\
             offsets.retention.check.interval.ms=30000\n\
             offset.metadata.max.bytes=100\n\
             offsets.load.buffer.size=65536\n\
             transaction.state.log.num.partitions=4\n\
             transaction.state.log.segment.bytes=1048576\n\
             transaction.max.timeout.ms=60000\n\
             transactional.id.expiration.ms=86400000\n\
             transaction.abort.timed.out.transaction.cleanup.interval.ms=500\n\
             transaction.remove.expired.transaction.cleanup.interval.ms=1000\n\
             offsets.commit.timeout.ms=5000\n",
        );
        let (cfg, _) = settings(&args).unwrap();
        assert_eq!(
            cfg.group,
            GroupConfig {
                offsets_topic_partitions: 3,
                offsets_topic_segment_bytes: 2 << 20,
                group_min_session_timeout_ms: 1000,
                group_max_session_timeout_ms: 20_000,
                group_initial_rebalance_delay_ms: 3000,
                group_max_size: 7,
                offsets_retention_minutes: 60,
                offsets_retention_check_interval_ms: 30_000,
                offset_metadata_max_bytes: 100,
                offsets_load_buffer_bytes: 65_536,
                ..GroupConfig::default()
            }
        );
        assert_eq!(
            cfg.txn,
            TxnConfig {
                transaction_state_partitions: 4,
                transaction_state_segment_bytes: 1 << 20,
                transaction_max_timeout_ms: 60_000,
                transactional_id_expiration_ms: 86_400_000,
                abort_timed_out_transaction_cleanup_interval_ms: 500,
                remove_expired_transaction_cleanup_interval_ms: 1000,
                ..TxnConfig::default()
            }
        );
    }

    /// As Kafka's `ConfigException`: the key, its value and the valid range, at startup.
    #[test]
    fn an_out_of_range_coordinator_key_is_refused_with_its_range() {
        for (props, expected) in [
            (
                "group.max.size=0\n",
                "group.max.size=0 is outside 1 ..= 1000000",
            ),
            (
                "offsets.retention.minutes=0\n",
                "offsets.retention.minutes=0 is outside 1 ..= 2147483647",
            ),
            (
                "group.min.session.timeout.ms=7000\ngroup.max.session.timeout.ms=6500\n",
                "group.max.session.timeout.ms=6500 is outside 7000 ..= 2147483647",
            ),
            (
                "offsets.topic.segment.bytes=-5\n",
                "offsets.topic.segment.bytes=-5 is outside 1048576 ..= 1073741824",
            ),
            (
                "transaction.max.timeout.ms=0\n",
                "transaction.max.timeout.ms = 0 is outside 1..=2147483647",
            ),
            (
                "transaction.abort.timed.out.transaction.cleanup.interval.ms=-1\n",
                "transaction.abort.timed.out.transaction.cleanup.interval.ms = -1 is outside \
                 1..=2147483647",
            ),
            (
                "transactional.id.expiration.ms=2147483648\n",
                "transactional.id.expiration.ms=2147483648: not a 32-bit integer",
            ),
            (
                "offsets.retention.check.interval.ms=soon\n",
                "offsets.retention.check.interval.ms=soon: not a 64-bit integer",
            ),
        ] {
            let (args, _d) = args_with(props);
            let e = format!("{:#}", settings(&args).unwrap_err());
            assert!(e.contains(expected), "{props}: {e}");
        }
    }

    #[test]
    fn a_bad_log_io_value_is_rejected_by_name() {
        let (args, _d) = args_with("log.io.mode=mmap\n");
        let e = settings(&args).unwrap_err().to_string();
        assert!(e.contains("log.io.mode=mmap"), "{e}");
        let (args, _d) = args_with("log.io.direct.durability=always\n");
        let e = settings(&args).unwrap_err().to_string();
        assert!(e.contains("log.io.direct.durability=always"), "{e}");
    }
}

#[cfg(test)]
#[path = "serve_config_tests.rs"]
mod config_tests;
