//! `server.properties` parsing against Kafka's behaviour (review findings).

use super::*;
use clap::Parser;

fn args_with(props: &str, data_dir: bool) -> (ServeArgs, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("server.properties");
    std::fs::write(&file, props).unwrap();
    let args = ServeArgs {
        data_dir: data_dir.then(|| dir.path().join("data")),
        listen: None,
        node_id: None,
        cluster_id: None,
        advertised_listener: None,
        config: Some(file),
    };
    (args, dir)
}

/// Kafka: `log.dirs` takes precedence over `log.dir`, and a repeated key's last value wins
/// (`java.util.Properties`). mirrorlog keeps the first of either: a file that ends with an
/// override (`log.dirs=/data/kafka` appended to the stock file) opens the stock directory.
#[test]
fn log_dirs_wins_over_log_dir_and_the_last_value_wins() {
    let (args, _d) = args_with("log.dir=/stock\nlog.dirs=/data/kafka\n", false);
    let (cfg, _) = settings(&args).unwrap();
    assert_eq!(
        cfg.logs.data_dirs,
        vec![PathBuf::from("/data/kafka")],
        "log.dirs must win over log.dir"
    );
    let (args, _d) = args_with("log.dirs=/stock\nlog.dirs=/data/kafka\n", false);
    let (cfg, _) = settings(&args).unwrap();
    assert_eq!(
        cfg.logs.data_dirs,
        vec![PathBuf::from("/data/kafka")],
        "the last log.dirs must win"
    );
}

/// Same for `advertised.listeners`: the last value wins in Kafka (mirrorlog: the first).
#[test]
fn the_last_advertised_listeners_wins() {
    let (args, _d) = args_with(
        "advertised.listeners=PLAINTEXT://old:9092\nadvertised.listeners=PLAINTEXT://new:9092\n",
        true,
    );
    let (cfg, _) = settings(&args).unwrap();
    assert_eq!(cfg.advertised_host, "new");
}

/// Kafka: `socket.request.max.bytes` is an int `atLeast(1)`; 0, negatives and values above
/// `i32::MAX` are a `ConfigException`. mirrorlog clamps them silently (0 → 1 byte: every request
/// then closes its connection), though the module docs promise out-of-range values are rejected.
#[test]
fn out_of_range_socket_request_max_bytes_is_rejected() {
    for bad in ["0", "-1", "3000000000"] {
        let (args, _d) = args_with(&format!("socket.request.max.bytes={bad}\n"), true);
        let r = settings(&args);
        assert!(
            r.is_err(),
            "socket.request.max.bytes={bad} accepted as {}",
            r.unwrap().1.request_max_bytes
        );
    }
}

/// `node.id` and `num.partitions` are Kafka ints; mirrorlog parses an i64 and truncates with
/// `as i32`, so 4294967297 becomes 1 and passes validation.
#[test]
fn int_settings_beyond_i32_are_rejected_not_truncated() {
    for (key, bad) in [("node.id", "4294967297"), ("num.partitions", "4294967297")] {
        let (args, _d) = args_with(&format!("{key}={bad}\n"), true);
        let r = settings(&args);
        assert!(
            r.is_err(),
            "{key}={bad} accepted as node.id {} / num.partitions {}",
            r.as_ref().unwrap().0.node_id,
            r.as_ref().unwrap().0.num_partitions
        );
    }
}

/// Kafka's stock `server.properties` says `listeners=PLAINTEXT://:9092` (empty host: every
/// interface). mirrorlog hands ":9092" to `to_socket_addrs` and refuses to start.
#[test]
fn a_listener_with_an_empty_host_binds_every_interface() {
    let (args, _d) = args_with(
        "listeners=PLAINTEXT://:9092\nadvertised.listeners=PLAINTEXT://localhost:9092\n",
        true,
    );
    let (_, server) = settings(&args).expect("Kafka's stock listeners line");
    assert!(server.listen.ip().is_unspecified(), "{}", server.listen);
    assert_eq!(server.listen.port(), 9092);
}

#[derive(clap::Parser)]
struct Cli {
    #[command(flatten)]
    serve: ServeArgs,
}

/// "Flags win over the file": an explicit `--listen 127.0.0.1:9092` loses to the file's
/// `listeners`, because the flag is recognised only by comparing with its default string.
#[test]
fn an_explicit_listen_flag_wins_over_the_file() {
    let (_, dir) = args_with("", true);
    let file = dir.path().join("server.properties");
    std::fs::write(&file, "listeners=PLAINTEXT://127.0.0.1:19092\n").unwrap();
    let cli = Cli::parse_from([
        "serve",
        "--listen",
        "127.0.0.1:9092",
        "--data-dir",
        dir.path().join("data").to_str().unwrap(),
        "--config",
        file.to_str().unwrap(),
    ]);
    let (_, server) = settings(&cli.serve).unwrap();
    assert_eq!(server.listen.port(), 9092, "the flag must win");
}

/// Only `PLAINTEXT://` is stripped: `advertised.listeners=SSL://broker:9093` (there is no TLS
/// here) is taken as host `SSL://broker`, port 9093, and advertised in Metadata to every
/// client, which cannot resolve it. Kafka refuses a listener whose security protocol it cannot
/// serve; a plain error is the least.
#[test]
fn a_non_plaintext_advertised_listener_is_rejected() {
    let (args, _d) = args_with("advertised.listeners=SSL://broker:9093\n", true);
    let r = settings(&args);
    assert!(
        r.is_err(),
        "advertised as host {:?}",
        r.unwrap().0.advertised_host
    );
}

/// Listening on every interface without `advertised.listeners` advertises `0.0.0.0` in
/// Metadata: a remote client bootstraps, then connects to 0.0.0.0 (its own host) and fails.
/// Kafka refuses to start ("advertised.listeners cannot use the nonroutable meta-address
/// 0.0.0.0"), and for the empty-host form advertises the machine's host name.
#[test]
fn the_unspecified_address_is_never_advertised() {
    for props in [
        "listeners=PLAINTEXT://0.0.0.0:9092\n",
        "listeners=PLAINTEXT://:9092\n",
        "advertised.listeners=PLAINTEXT://0.0.0.0:9092\n",
    ] {
        let (args, _d) = args_with(props, true);
        if let Ok((cfg, _)) = settings(&args) {
            assert_ne!(cfg.advertised_host, "0.0.0.0", "{props}");
        }
    }
}

/// Kafka: `num.recovery.threads.per.data.dir` is an int `atLeast(1)`. mirrorlog refused 0 and
/// negatives, but with a message that did not name the key ("recovery threads 0 …"), and cast a
/// negative through `as usize` (−1 was reported as 18446744073709551615).
#[test]
fn out_of_range_recovery_threads_are_rejected_by_key_and_value() {
    for bad in ["0", "-1", "65", "4294967297"] {
        let (args, _d) = args_with(&format!("num.recovery.threads.per.data.dir={bad}\n"), true);
        let e = format!("{:#}", settings(&args).unwrap_err());
        assert!(
            e.contains(&format!("num.recovery.threads.per.data.dir={bad}")),
            "{bad}: {e}"
        );
    }
    let (args, _d) = args_with("num.recovery.threads.per.data.dir=64\n", true);
    assert_eq!(settings(&args).unwrap().0.logs.recovery_threads, 64);
}

/// Kafka's own stock `config/server.properties` (4.x, KRaft combined mode) starts a broker:
/// its cluster, quorum, thread-pool and socket-buffer keys are ignored with a warning, the
/// rest applied; an unknown key is still refused.
#[test]
fn kafkas_stock_server_properties_is_accepted() {
    let stock = "process.roles=broker,controller\n\
        node.id=1\n\
        controller.quorum.bootstrap.servers=localhost:9093\n\
        listeners=PLAINTEXT://:9092,CONTROLLER://:9093\n\
        inter.broker.listener.name=PLAINTEXT\n\
        advertised.listeners=PLAINTEXT://localhost:9092,CONTROLLER://localhost:9093\n\
        controller.listener.names=CONTROLLER\n\
        listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL\n\
        num.network.threads=3\n\
        num.io.threads=8\n\
        socket.send.buffer.bytes=102400\n\
        socket.receive.buffer.bytes=102400\n\
        socket.request.max.bytes=104857600\n\
        log.dirs=/tmp/kraft-combined-logs\n\
        num.partitions=1\n\
        num.recovery.threads.per.data.dir=1\n\
        offsets.topic.replication.factor=1\n\
        share.coordinator.state.topic.replication.factor=1\n\
        share.coordinator.state.topic.min.isr=1\n\
        transaction.state.log.replication.factor=1\n\
        transaction.state.log.min.isr=1\n\
        log.retention.hours=168\n\
        log.segment.bytes=1073741824\n\
        log.retention.check.interval.ms=300000\n\
        group.initial.rebalance.delay.ms=0\n";
    let (args, _d) = args_with(stock, false);
    let (cfg, server) = settings(&args).unwrap();
    assert_eq!(
        cfg.logs.data_dirs,
        vec![PathBuf::from("/tmp/kraft-combined-logs")]
    );
    assert_eq!(server.listen.port(), 9092);
    assert_eq!(cfg.advertised_host, "localhost");
    assert_eq!(cfg.logs.default_log_config.retention_ms, 168 * 3_600_000);

    let (args, _d) = args_with(&format!("{stock}ssl.keystore.location=/k\n"), false);
    let e = settings(&args).unwrap_err().to_string();
    assert!(e.contains("ssl.keystore.location"), "{e}");
    // Kafka's own default (the stock file sets 0) is honoured, as every coordinator key is.
    let (args, _d) = args_with(
        &format!("{stock}group.initial.rebalance.delay.ms=3000\n"),
        false,
    );
    let (cfg, _) = settings(&args).unwrap();
    assert_eq!(cfg.group.group_initial_rebalance_delay_ms, 3000);
}

/// Kafka's `Selector` turns idle expiry off for a negative `connections.max.idle.ms` and takes
/// any long; 0 stays refused.
#[test]
fn negative_connections_max_idle_ms_means_never() {
    let (args, _d) = args_with("connections.max.idle.ms=-1\n", true);
    let (_, server) = settings(&args).unwrap();
    assert_eq!(server.idle_timeout_ms, ServerConfig::IDLE_TIMEOUT_NEVER);
    let (args, _d) = args_with("connections.max.idle.ms=4294967296\n", true);
    assert_eq!(settings(&args).unwrap().1.idle_timeout_ms, 4_294_967_296);
    let (args, _d) = args_with("connections.max.idle.ms=0\n", true);
    assert!(settings(&args).is_err());
}

/// Kafka's `max.incremental.fetch.session.cache.slots` (INT, default 1000, at least 0) was refused
/// as an unknown key, so a broker's existing file that set it did not start.
#[test]
fn max_incremental_fetch_session_cache_slots_is_kafkas() {
    let (args, _d) = args_with("", true);
    let (cfg, _) = settings(&args).unwrap();
    assert_eq!(cfg.max_incremental_fetch_session_cache_slots, 1000);
    for n in [0, 1, 2_147_483_647] {
        let (args, _d) = args_with(
            &format!("max.incremental.fetch.session.cache.slots={n}\n"),
            true,
        );
        let (cfg, _) = settings(&args).unwrap();
        assert_eq!(cfg.max_incremental_fetch_session_cache_slots, n);
    }
    for bad in ["-1", "2147483648", "many"] {
        let (args, _d) = args_with(
            &format!("max.incremental.fetch.session.cache.slots={bad}\n"),
            true,
        );
        let e = format!("{:#}", settings(&args).unwrap_err());
        assert!(
            e.contains("max.incremental.fetch.session.cache.slots"),
            "{e}"
        );
    }
}

/// `log.retention.check.interval.ms` (Kafka's LONG, default 300000, at least 1) was ignored:
/// retention ran at every 5 s upkeep. It now sets how often the log manager applies it.
#[test]
fn log_retention_check_interval_ms_sets_the_retention_schedule() {
    let (args, _d) = args_with("", true);
    assert_eq!(
        settings(&args).unwrap().0.logs.retention_check_interval_ms,
        300_000
    );
    let (args, _d) = args_with("log.retention.check.interval.ms=1000\n", true);
    assert_eq!(
        settings(&args).unwrap().0.logs.retention_check_interval_ms,
        1000
    );
    let (args, _d) = args_with("log.retention.check.interval.ms=0\n", true);
    let e = settings(&args).unwrap_err().to_string();
    assert!(e.contains("log.retention.check.interval.ms=0"), "{e}");
}

/// Kafka accepts `log.initial.task.delay.ms` (an internal LONG, default 30000, at least 0; its
/// own test harnesses set it to 100 so retention starts soon): the first retention check's
/// delay. mirrorlog refused it as an unknown key, though the log manager has the setting.
#[test]
fn log_initial_task_delay_ms_sets_the_first_retention_check() {
    let (args, _d) = args_with("", true);
    assert_eq!(
        settings(&args).unwrap().0.logs.initial_task_delay_ms,
        30_000
    );
    let (args, _d) = args_with("log.initial.task.delay.ms=100\n", true);
    assert_eq!(settings(&args).unwrap().0.logs.initial_task_delay_ms, 100);
    let (args, _d) = args_with("log.initial.task.delay.ms=0\n", true);
    assert_eq!(settings(&args).unwrap().0.logs.initial_task_delay_ms, 0);
    let (args, _d) = args_with("log.initial.task.delay.ms=-1\n", true);
    let e = settings(&args).unwrap_err().to_string();
    assert!(e.contains("log.initial.task.delay.ms=-1"), "{e}");
}

/// Kafka parses a BOOLEAN key as `true` or `false` in any case (`ConfigDef.parseType`), so a
/// file with `auto.create.topics.enable=TRUE` starts Kafka; mirrorlog refused it.
#[test]
fn boolean_keys_take_true_and_false_in_any_case() {
    let (args, _d) = args_with(
        "auto.create.topics.enable=FALSE\nlog.preallocate=False\n",
        true,
    );
    let (cfg, _) = settings(&args).unwrap();
    assert!(!cfg.auto_create_topics);
    assert!(!cfg.logs.preallocate);
    let (args, _d) = args_with("auto.create.topics.enable=True\n", true);
    assert!(settings(&args).unwrap().0.auto_create_topics);
    for bad in ["yes", "1", "tru"] {
        let (args, _d) = args_with(&format!("log.preallocate={bad}\n"), true);
        let e = settings(&args).unwrap_err().to_string();
        assert!(
            e.contains("log.preallocate") && e.contains("true/false"),
            "{e}"
        );
    }
}

/// DescribeConfigs shows the keys the file (or a flag) names as STATIC_BROKER_CONFIG, even at
/// their default: `settings` records them, the last of a repeated key.
#[test]
fn the_files_keys_and_the_flags_are_recorded_for_describe_configs() {
    let (mut args, _d) = args_with(
        "log.retention.check.interval.ms=300000\ngroup.max.size=5\ngroup.max.size=7\n",
        true,
    );
    args.node_id = Some(3);
    let (cfg, _) = settings(&args).unwrap();
    let get = |k: &str| cfg.static_config.get(k).map(String::as_str);
    assert_eq!(get("log.retention.check.interval.ms"), Some("300000"));
    assert_eq!(get("group.max.size"), Some("7"));
    assert_eq!(get("node.id"), Some("3"));
    assert!(get("log.dirs").is_some_and(|d| d.ends_with("data")));
    assert_eq!(get("num.partitions"), None);
}

/// Kafka's `max.connections`, `max.connections.per.ip` and `max.connections.per.ip.overrides`
/// were refused as unknown keys (the connection bound was fixed at 10000, no per-address one).
/// They are taken with Kafka's defaults and checks: `max.connections.per.ip` 0 only with
/// overrides, an override host of Kafka's characters and a count that is an int.
#[test]
fn the_connection_limits_are_taken_with_kafkas_checks() {
    let (args, _d) = args_with("", true);
    let (_, server) = settings(&args).unwrap();
    assert_eq!(server.max_connections, 10_000);
    assert_eq!(server.max_connections_per_ip, i32::MAX as usize);
    assert!(server.max_connections_per_ip_overrides.is_empty());
    let (args, _d) = args_with(
        "max.connections=50\nmax.connections.per.ip=0\n\
         max.connections.per.ip.overrides=127.0.0.1:5, localhost:7\n",
        true,
    );
    let (_, server) = settings(&args).unwrap();
    assert_eq!(server.max_connections, 50);
    assert_eq!(server.max_connections_per_ip, 0);
    assert_eq!(
        server.max_connections_per_ip_overrides,
        vec![("127.0.0.1".to_string(), 5), ("localhost".to_string(), 7)]
    );
    for (bad, says) in [
        ("max.connections.per.ip=0\n", "can be set to zero only if"),
        ("max.connections.per.ip=-1\n", "max.connections.per.ip=-1"),
        ("max.connections=0\n", "max.connections=0"),
        ("max.connections=2147483648\n", "max.connections=2147483648"),
        (
            "max.connections.per.ip.overrides=127.0.0.1:not_a_number\n",
            "max.connections.per.ip.overrides",
        ),
        (
            "max.connections.per.ip.overrides=host/name:1\n",
            "contains invalid addresses : host/name",
        ),
    ] {
        let (args, _d) = args_with(bad, true);
        let e = format!("{:#}", settings(&args).unwrap_err());
        assert!(e.contains(says), "{bad}: {e}");
    }
}

/// As every config field: each `serve` flag's help says what happens without it (its default,
/// or that it is required), so `mirrorlog serve --help` agrees with README "Running the broker".
#[test]
fn every_serve_flag_says_its_default_in_its_help() {
    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        serve: ServeArgs,
    }
    let cmd = <Cli as clap::CommandFactory>::command();
    for arg in cmd.get_arguments() {
        if arg.get_id() == "help" {
            continue;
        }
        let help = arg.get_help().map(|h| h.to_string()).unwrap_or_default();
        assert!(
            help.contains("default") || help.contains("Required"),
            "--{}'s help says neither its default nor that it is required: {help:?}",
            arg.get_id()
        );
    }
}
