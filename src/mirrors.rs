//! `mirrorlog mirrors`: the `kafka-cluster-mirrors.sh` equivalent. Sends one mirror admin RPC
//! (API keys 94–106, `mirrorlog_broker::mirror_rpc`) to the destination broker and prints the
//! answer as a table, or as one JSON object with `--json`. Any error code in the answer — the
//! request's or a topic's — makes the exit status 1 and is printed as `NAME: message`.

use anyhow::{Context, Result, bail};
use clap::{ArgGroup, Args};
use mirrorlog_broker::client::Client;
use mirrorlog_broker::errors::error_name;
use mirrorlog_broker::mirror_rpc::*;
use serde_json::{Value, json};
use std::process::ExitCode;

/// `mirrorlog mirrors` arguments.
#[derive(Args, Debug)]
#[command(group(ArgGroup::new("action").required(true).args([
    "create", "delete", "list", "describe", "start", "stop", "pause", "resume", "recover",
    "preflight", "failover_report",
])))]
#[command(group(ArgGroup::new("selection").args(["topics", "pattern", "all_topics"])))]
pub struct MirrorsArgs {
    /// The destination broker (where the mirror lives), `HOST:PORT`.
    #[arg(long, value_name = "HOST:PORT")]
    bootstrap_server: String,
    /// Create mirror `--mirror` from `--source-bootstrap`, with `--config` settings.
    #[arg(long)]
    create: bool,
    /// Delete mirror `--mirror` (refused while any of its topics is not stopped).
    #[arg(long)]
    delete: bool,
    /// List the mirrors.
    #[arg(long)]
    list: bool,
    /// Describe `--mirror` (or every mirror): each partition's state, lag, last mirror epoch.
    #[arg(long)]
    describe: bool,
    /// Start mirroring topics (`--topics`, `--pattern` — added to `mirror.topics.include` —
    /// or `--all-topics`).
    #[arg(long)]
    start: bool,
    /// Stop mirroring topics: failover, the destination topics become writable.
    #[arg(long)]
    stop: bool,
    /// Pause mirroring topics (they stay read-only).
    #[arg(long)]
    pause: bool,
    /// Resume paused topics from where they stopped.
    #[arg(long)]
    resume: bool,
    /// Retry the FAILED partitions of topics now.
    #[arg(long)]
    recover: bool,
    /// Check, before creating anything, what mirroring `--topics`/`--pattern`/`--all-topics`
    /// from `--source-bootstrap` (with `--config` settings) would run into: topic-name and
    /// topic-id conflicts, patterns that match nothing, source topic configs the destination
    /// cannot take, group collisions and groups active on the destination. Exit status 1 when
    /// any check FAILs.
    #[arg(long)]
    preflight: bool,
    /// What stopping `--mirror` now would do: per source group and mirrored partition, the
    /// records its consumers would read again on the destination and those the destination
    /// does not hold yet; and the transactions a stop would abort. Exit status 3 when a
    /// group's offsets could not be read (listed with its error; the report is incomplete).
    #[arg(long)]
    failover_report: bool,
    /// The mirror's name.
    #[arg(long, value_name = "NAME")]
    mirror: Option<String>,
    /// With --create or --preflight: the source cluster, `HOST:PORT[,HOST:PORT…]` (its
    /// `bootstrap.servers`).
    #[arg(long, value_name = "HOST:PORT")]
    source_bootstrap: Option<String>,
    /// With --create or --preflight: a mirror setting `KEY=VALUE` (repeatable), e.g.
    /// `mirror.topics.include=orders.*` or `mirror.metadata.refresh.interval.ms=1000`.
    #[arg(long = "config", value_name = "KEY=VALUE")]
    configs: Vec<String>,
    /// Topics by name, comma-separated.
    #[arg(long, value_name = "A,B", value_delimiter = ',')]
    topics: Vec<String>,
    /// Topics by regex (matched against whole names).
    #[arg(long, value_name = "REGEX")]
    pattern: Option<String>,
    /// Every topic (the pattern `.*`).
    #[arg(long)]
    all_topics: bool,
    /// With --describe: only FAILED partitions.
    #[arg(long)]
    failed: bool,
    /// One JSON object on stdout instead of tables.
    #[arg(long)]
    json: bool,
}

fn opt(s: &Option<String>) -> Value {
    s.as_ref().map_or(Value::Null, |s| json!(s))
}

/// Prints rows as a table: columns padded to their widest cell.
fn table(header: &[&str], rows: &[Vec<String>]) {
    let mut widths: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            widths[i] = widths[i].max(c.chars().count());
        }
    }
    let line = |cells: Vec<String>| {
        let s: Vec<String> = cells
            .iter()
            .enumerate()
            .map(|(i, c)| format!("{c:<w$}", w = widths[i]))
            .collect();
        println!("{}", s.join("  ").trim_end());
    };
    line(header.iter().map(|h| h.to_string()).collect());
    for r in rows {
        line(r.clone());
    }
}

fn require_mirror(a: &MirrorsArgs) -> Result<String> {
    a.mirror
        .clone()
        .context("--mirror NAME is required for this action")
}

/// Runs the subcommand; the exit status is 1 when the broker answered an error, and
/// [`FAILOVER_REPORT_INCOMPLETE`] when a failover report could not read every group.
pub fn run(a: MirrorsArgs) -> Result<ExitCode> {
    if a.failed && !a.describe {
        bail!("--failed goes with --describe");
    }
    if (a.source_bootstrap.is_some() || !a.configs.is_empty()) && !(a.create || a.preflight) {
        bail!("--source-bootstrap and --config go with --create or --preflight");
    }
    let topic_action = a.start || a.stop || a.pause || a.resume || a.recover;
    let selected = !a.topics.is_empty() || a.pattern.is_some() || a.all_topics;
    if topic_action && !selected {
        bail!("name the topics: --topics A,B, --pattern REGEX or --all-topics");
    }
    if !(topic_action || a.preflight) && selected {
        bail!(
            "--topics, --pattern and --all-topics go with --start/--stop/--pause/--resume/--recover/--preflight"
        );
    }
    if a.preflight {
        return preflight(&a);
    }
    if a.failover_report {
        return failover_report(&a);
    }
    let mut client = Client::connect(&a.bootstrap_server)
        .with_context(|| format!("connecting to {}", a.bootstrap_server))?;
    let mut call = |req: MirrorRequest| {
        client
            .mirror_call(&req)
            .with_context(|| format!("{:?} to {}", req.api_key(), a.bootstrap_server))
    };
    if a.create {
        let name = require_mirror(&a)?;
        let source = a
            .source_bootstrap
            .clone()
            .context("--create needs --source-bootstrap HOST:PORT")?;
        let mut configs = vec![ConfigEntry {
            name: "bootstrap.servers".into(),
            value: Some(source.clone()),
        }];
        for c in &a.configs {
            let (k, v) = c
                .split_once('=')
                .with_context(|| format!("--config {c:?} is not KEY=VALUE"))?;
            configs.push(ConfigEntry {
                name: k.trim().into(),
                value: Some(v.into()),
            });
        }
        let resp = call(MirrorRequest::CreateClusterMirror(
            CreateClusterMirrorRequest {
                mirror_name: name.clone(),
                configs,
            },
        ))?;
        let MirrorResponse::CreateClusterMirror(r) = resp else {
            bail!("unexpected response {resp:?}");
        };
        return Ok(simple(
            &a,
            &r,
            &format!("Created cluster mirror {name} from {source}."),
        ));
    }
    if a.delete {
        let name = require_mirror(&a)?;
        let resp = call(MirrorRequest::DeleteClusterMirror(
            DeleteClusterMirrorRequest {
                mirror_name: name.clone(),
                state_offset: -1,
            },
        ))?;
        let MirrorResponse::DeleteClusterMirror(r) = resp else {
            bail!("unexpected response {resp:?}");
        };
        return Ok(simple(&a, &r, &format!("Deleted cluster mirror {name}.")));
    }
    if a.list {
        let resp = call(MirrorRequest::ListClusterMirrors(
            ListClusterMirrorsRequest {
                include_topic_names: true,
            },
        ))?;
        let MirrorResponse::ListClusterMirrors(r) = resp else {
            bail!("unexpected response {resp:?}");
        };
        return Ok(list(&a, &r));
    }
    if a.describe {
        let resp = call(MirrorRequest::DescribeClusterMirrors(
            DescribeClusterMirrorsRequest {
                mirror_names: a.mirror.clone().map(|m| vec![m]),
                ..Default::default()
            },
        ))?;
        let MirrorResponse::DescribeClusterMirrors(r) = resp else {
            bail!("unexpected response {resp:?}");
        };
        return Ok(describe(&a, &r));
    }
    let name = require_mirror(&a)?;
    let patterns: Vec<String> = if a.all_topics {
        vec![".*".into()]
    } else {
        a.pattern.clone().into_iter().collect()
    };
    let req = if a.start {
        MirrorRequest::StartMirrorTopics(StartMirrorTopicsRequest {
            mirror_name: name.clone(),
            topics: a
                .topics
                .iter()
                .map(|t| StartTopic {
                    name: t.clone(),
                    topic_id: [0; 16],
                    num_partitions: -1,
                })
                .collect(),
            include_patterns: patterns,
            timeout_ms: 30_000,
            exclude_patterns: vec![],
        })
    } else {
        let body = MirrorTopicsRequest {
            mirror_name: name.clone(),
            topics: a
                .topics
                .iter()
                .map(|t| TopicName { name: t.clone() })
                .collect(),
            state_offset: -1,
            patterns,
        };
        if a.stop {
            MirrorRequest::StopMirrorTopics(body)
        } else if a.pause {
            MirrorRequest::PauseMirrorTopics(body)
        } else if a.resume {
            MirrorRequest::ResumeMirrorTopics(body)
        } else {
            MirrorRequest::RecoverMirrorTopics(body)
        }
    };
    let verb = if a.start {
        "started"
    } else if a.stop {
        "stopped"
    } else if a.pause {
        "paused"
    } else if a.resume {
        "resumed"
    } else {
        "recovered"
    };
    let resp = call(req)?;
    let r = match resp {
        MirrorResponse::StartMirrorTopics(r)
        | MirrorResponse::StopMirrorTopics(r)
        | MirrorResponse::PauseMirrorTopics(r)
        | MirrorResponse::ResumeMirrorTopics(r)
        | MirrorResponse::RecoverMirrorTopics(r) => r,
        other => bail!("unexpected response {other:?}"),
    };
    Ok(topics_result(&a, &name, verb, &r))
}

/// A wire client (the mirror's own) for `bootstrap`, a comma-separated `host:port` list.
fn kafka_client(
    bootstrap: &str,
) -> Result<std::sync::Arc<mirrorlog_broker::source_client::KafkaSource>> {
    use mirrorlog_broker::source_client::{KafkaSource, KafkaSourceConfig};
    KafkaSource::new(KafkaSourceConfig::new(
        bootstrap.split(',').map(|s| s.trim().to_string()),
    ))
    .map_err(|e| anyhow::anyhow!("{bootstrap}: {e}"))
}

/// `--failover-report`.
fn failover_report(a: &MirrorsArgs) -> Result<ExitCode> {
    use mirrorlog_index::{Offset, TopicPartition};
    let name = require_mirror(a)?;
    let mut client = Client::connect(&a.bootstrap_server)
        .with_context(|| format!("connecting to {}", a.bootstrap_server))?;
    let resp = client.mirror_call(&MirrorRequest::DescribeClusterMirrors(
        DescribeClusterMirrorsRequest {
            mirror_names: Some(vec![name.clone()]),
            ..Default::default()
        },
    ))?;
    let MirrorResponse::DescribeClusterMirrors(r) = resp else {
        bail!("unexpected response {resp:?}");
    };
    let m = r.mirrors.first().context("no mirror in the answer")?;
    if m.error_code != 0 {
        report_error(m.error_code, &m.error_message);
        return Ok(ExitCode::FAILURE);
    }
    let cfg = |k: &str| -> Vec<String> {
        m.configs
            .iter()
            .find(|c| c.name == k)
            .and_then(|c| c.value.clone())
            .map(|v| {
                v.split(',')
                    .filter(|s| !s.is_empty())
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut partitions = std::collections::BTreeMap::new();
    let mut open = vec![];
    for t in &m.topics {
        for p in &t.partitions {
            if p.state_value == "STOPPED" {
                continue;
            }
            partitions.insert(
                TopicPartition {
                    topic: t.topic_name.clone(),
                    partition: p.partition_index,
                },
                Offset(p.destination_offset),
            );
            for o in &p.open_transactions {
                open.push((t.topic_name.clone(), p.partition_index, o.clone()));
            }
        }
    }
    let report = mirrorlog_mirror::failover_report::failover_exposure(
        kafka_client(&m.source_bootstrap)?.as_ref(),
        kafka_client(&a.bootstrap_server)?.as_ref(),
        &partitions,
        &cfg("mirror.groups.include"),
        &cfg("mirror.groups.exclude"),
    )
    .context("failover report")?;
    let exposure = &report.exposures;
    let unreadable: Vec<(String, &'static str, Option<i16>, String)> =
        report.unreadable.iter().map(unreadable_row).collect();
    let opt_n = |v: Option<i64>| v.map_or("-".to_string(), |n| n.to_string());
    if a.json {
        let groups: Vec<Value> = exposure
            .iter()
            .map(|e| {
                json!({
                    "group": e.group,
                    "topic": e.partition.topic,
                    "partition": e.partition.partition,
                    "source_committed": e.source_committed.get(),
                    "destination_committed": e.destination_committed.map(|o| o.get()),
                    "destination_log_end": e.destination_log_end.get(),
                    "redelivered": e.redelivered,
                    "not_on_destination": e.not_on_destination,
                })
            })
            .collect();
        let txns: Vec<Value> = open
            .iter()
            .map(|(t, p, o)| {
                json!({
                    "topic": t,
                    "partition": p,
                    "producer_id": o.producer_id,
                    "producer_epoch": o.producer_epoch,
                    "first_offset": o.first_offset,
                })
            })
            .collect();
        let unreadable: Vec<Value> = unreadable
            .iter()
            .map(|(group, cluster, code, error)| {
                json!({ "group": group, "cluster": cluster, "error_code": code, "error": error })
            })
            .collect();
        println!(
            "{}",
            json!({
                "mirror": name,
                "complete": unreadable.is_empty(),
                "groups": groups,
                "unreadable_groups": unreadable,
                "open_transactions": txns,
            })
        );
        return Ok(failover_report_status(&report));
    }
    println!("Failing over cluster mirror {name} now:");
    let rows: Vec<Vec<String>> = exposure
        .iter()
        .map(|e| {
            vec![
                e.group.clone(),
                e.partition.topic.clone(),
                e.partition.partition.to_string(),
                e.source_committed.get().to_string(),
                opt_n(e.destination_committed.map(|o| o.get())),
                e.destination_log_end.get().to_string(),
                opt_n(e.redelivered),
                e.not_on_destination.to_string(),
            ]
        })
        .collect();
    table(
        &[
            "GROUP",
            "TOPIC",
            "PARTITION",
            "SOURCE-COMMITTED",
            "DEST-COMMITTED",
            "DEST-LEO",
            "REDELIVERED",
            "NOT-ON-DEST",
        ],
        &rows,
    );
    if !unreadable.is_empty() {
        println!("Groups whose offsets could not be read (not in the table above):");
        let rows: Vec<Vec<String>> = unreadable
            .iter()
            .map(|(group, cluster, _, error)| {
                vec![group.clone(), cluster.to_string(), error.clone()]
            })
            .collect();
        table(&["GROUP", "CLUSTER", "ERROR"], &rows);
    }
    if open.is_empty() {
        println!("No open transaction: the stop aborts nothing.");
    } else {
        println!("Open transactions the stop would abort:");
        let rows: Vec<Vec<String>> = open
            .iter()
            .map(|(t, p, o)| {
                vec![
                    t.clone(),
                    p.to_string(),
                    o.producer_id.to_string(),
                    o.producer_epoch.to_string(),
                    o.first_offset.to_string(),
                ]
            })
            .collect();
        table(
            &["TOPIC", "PARTITION", "PRODUCER-ID", "EPOCH", "FIRST-OFFSET"],
            &rows,
        );
    }
    if !unreadable.is_empty() {
        eprintln!(
            "error: failover report incomplete: {} group(s) could not be read",
            unreadable.len()
        );
    }
    Ok(failover_report_status(&report))
}

/// The exit status of `--failover-report` when some groups' offsets could not be read (the
/// rest of the report is printed). A report that fails as a whole exits 1; clap's usage errors
/// are 2.
const FAILOVER_REPORT_INCOMPLETE: u8 = 3;

/// 0 when every group was read, [`FAILOVER_REPORT_INCOMPLETE`] otherwise.
fn failover_report_status(r: &mirrorlog_mirror::failover_report::FailoverReport) -> ExitCode {
    if r.unreadable.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(FAILOVER_REPORT_INCOMPLETE)
    }
}

/// An unreadable group as printed: group, cluster, Kafka error code (if any), error text.
fn unreadable_row(
    u: &mirrorlog_mirror::failover_report::UnreadableGroup,
) -> (String, &'static str, Option<i16>, String) {
    use mirrorlog_mirror::source::SourceError;
    let (code, error) = match &u.error {
        SourceError::Kafka { code, message } => {
            let name = error_name(*code);
            let text = if message.is_empty() || *message == name {
                name
            } else if message.starts_with(&name) {
                message.clone()
            } else {
                format!("{name}: {message}")
            };
            (Some(*code), text)
        }
        e => (None, e.to_string()),
    };
    (u.group.clone(), u.cluster.name(), code, error)
}

/// `--preflight`: both clusters read through the mirror's own wire client.
fn preflight(a: &MirrorsArgs) -> Result<ExitCode> {
    use mirrorlog_mirror::manager::MirrorConfig;
    use mirrorlog_mirror::preflight::{Plan, Severity};
    let source = a
        .source_bootstrap
        .clone()
        .context("--preflight needs --source-bootstrap HOST:PORT")?;
    let mut config = MirrorConfig::new(a.mirror.as_deref().unwrap_or("preflight"));
    for c in &a.configs {
        let (k, v) = c
            .split_once('=')
            .with_context(|| format!("--config {c:?} is not KEY=VALUE"))?;
        let known = config.set(k.trim(), v).map_err(anyhow::Error::msg)?;
        if !known && !mirrorlog_broker::mirrors::SOURCE_KEYS.contains(&k.trim()) {
            bail!("unknown cluster mirror config {:?}", k.trim());
        }
    }
    config.validate().map_err(anyhow::Error::msg)?;
    let plan = Plan {
        topics: a.topics.clone(),
        patterns: if a.all_topics {
            vec![".*".into()]
        } else {
            a.pattern.clone().into_iter().collect()
        },
        config,
    };
    let findings = mirrorlog_mirror::preflight::preflight(
        kafka_client(&source)?.as_ref(),
        kafka_client(&a.bootstrap_server)?.as_ref(),
        &plan,
    )
    .context("pre-flight check")?;
    if a.json {
        let rows: Vec<Value> = findings
            .iter()
            .map(|f| {
                json!({
                    "check": f.check,
                    "subject": f.subject,
                    "result": f.severity.name(),
                    "detail": f.detail,
                })
            })
            .collect();
        println!("{}", json!({ "findings": rows }));
    } else {
        let rows: Vec<Vec<String>> = findings
            .iter()
            .map(|f| {
                vec![
                    f.check.to_string(),
                    f.subject.clone(),
                    f.severity.name().to_string(),
                    f.detail.clone(),
                ]
            })
            .collect();
        table(&["CHECK", "SUBJECT", "RESULT", "DETAIL"], &rows);
    }
    let failed = findings
        .iter()
        .filter(|f| f.severity == Severity::Fail)
        .count();
    if failed > 0 {
        eprintln!("error: pre-flight: {failed} check(s) failed");
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

fn report_error(code: i16, message: &Option<String>) {
    eprintln!(
        "error: {}: {}",
        error_name(code),
        message.as_deref().unwrap_or("(no message)")
    );
}

fn simple(a: &MirrorsArgs, r: &MirrorErrorResponse, ok: &str) -> ExitCode {
    if a.json {
        println!(
            "{}",
            json!({
                "mirror": a.mirror,
                "error": error_name(r.error_code),
                "message": opt(&r.error_message),
            })
        );
    }
    if r.error_code != 0 {
        report_error(r.error_code, &r.error_message);
        return ExitCode::FAILURE;
    }
    if !a.json {
        println!("{ok}");
    }
    ExitCode::SUCCESS
}

fn list(a: &MirrorsArgs, r: &ListClusterMirrorsResponse) -> ExitCode {
    if a.json {
        let mirrors: Vec<Value> = r
            .mirrors
            .iter()
            .map(|m| {
                json!({
                    "mirror": m.mirror_name,
                    "source_bootstrap": m.source_bootstrap,
                    "source_cluster_id": opt(&m.source_cluster_id),
                    "topics": m.topic_names,
                })
            })
            .collect();
        println!("{}", json!({ "mirrors": mirrors }));
    } else {
        let rows: Vec<Vec<String>> = r
            .mirrors
            .iter()
            .map(|m| {
                vec![
                    m.mirror_name.clone(),
                    m.source_bootstrap.clone(),
                    m.source_cluster_id.clone().unwrap_or_else(|| "-".into()),
                    m.topic_names.join(","),
                ]
            })
            .collect();
        table(&["MIRROR", "SOURCE", "SOURCE-CLUSTER-ID", "TOPICS"], &rows);
    }
    if r.error_code != 0 {
        report_error(r.error_code, &None);
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}

/// Source high watermark − destination log end; none before the first fetch, and none once
/// STOPPED (the topic is local then: its log end moves with local writes).
fn lag(p: &PartitionDescription) -> Option<i64> {
    (p.source_offset >= 0 && p.state_value != "STOPPED")
        .then(|| (p.source_offset - p.destination_offset).max(0))
}

fn describe(a: &MirrorsArgs, r: &DescribeClusterMirrorsResponse) -> ExitCode {
    let keep = |p: &PartitionDescription| !a.failed || p.state_value == "FAILED";
    let mut failed = false;
    if a.json {
        let mirrors: Vec<Value> = r
            .mirrors
            .iter()
            .map(|m| {
                let topics: Vec<Value> = m
                    .topics
                    .iter()
                    .flat_map(|t| {
                        t.partitions.iter().filter(|p| keep(p)).map(|p| {
                            json!({
                                "topic": t.topic_name,
                                "partition": p.partition_index,
                                "state": p.state_value,
                                "source_offset": p.source_offset,
                                "destination_offset": p.destination_offset,
                                "lag": lag(p),
                                "last_mirror_epoch": p.last_mirror_epoch,
                                "last_mirror_offset": p.last_mirror_offset,
                                "retry_attempt": p.retry_attempt,
                                "error_message": opt(&p.error_message),
                            })
                        })
                    })
                    .collect();
                let configs: serde_json::Map<String, Value> = m
                    .configs
                    .iter()
                    .map(|c| (c.name.clone(), opt(&c.value)))
                    .collect();
                json!({
                    "mirror": m.mirror_name,
                    "error": error_name(m.error_code),
                    "message": opt(&m.error_message),
                    "source_bootstrap": m.source_bootstrap,
                    "source_cluster_id": opt(&m.source_cluster_id),
                    "configs": configs,
                    "partitions": topics,
                })
            })
            .collect();
        println!("{}", json!({ "mirrors": mirrors }));
    }
    for m in &r.mirrors {
        if m.error_code != 0 {
            report_error(m.error_code, &m.error_message);
            failed = true;
            continue;
        }
        if a.json {
            continue;
        }
        let cfg = |k: &str| {
            m.configs
                .iter()
                .find(|c| c.name == k)
                .and_then(|c| c.value.clone())
                .unwrap_or_default()
        };
        println!(
            "Mirror {}  source {} (cluster {})  include [{}]  exclude [{}]",
            m.mirror_name,
            m.source_bootstrap,
            m.source_cluster_id.as_deref().unwrap_or("not yet known"),
            cfg("mirror.topics.include"),
            cfg("mirror.topics.exclude"),
        );
        let rows: Vec<Vec<String>> = m
            .topics
            .iter()
            .flat_map(|t| {
                t.partitions.iter().filter(|p| keep(p)).map(|p| {
                    let dash = |v: i64| {
                        if v < 0 {
                            "-".to_string()
                        } else {
                            v.to_string()
                        }
                    };
                    vec![
                        t.topic_name.clone(),
                        p.partition_index.to_string(),
                        p.state_value.clone(),
                        dash(p.source_offset),
                        p.destination_offset.to_string(),
                        lag(p).map_or("-".into(), |l| l.to_string()),
                        dash(p.last_mirror_epoch.into()),
                        dash(p.last_mirror_offset),
                        p.retry_attempt.to_string(),
                        p.error_message.clone().unwrap_or_default(),
                    ]
                })
            })
            .collect();
        table(
            &[
                "TOPIC",
                "PARTITION",
                "STATE",
                "SOURCE-HW",
                "DEST-LEO",
                "LAG",
                "LAST-MIRROR-EPOCH",
                "LAST-MIRROR-OFFSET",
                "RETRIES",
                "ERROR",
            ],
            &rows,
        );
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

fn topics_result(a: &MirrorsArgs, mirror: &str, verb: &str, r: &MirrorTopicsResponse) -> ExitCode {
    let failed = r.error_code != 0 || r.topics.iter().any(|t| t.error_code != 0);
    if a.json {
        let topics: Vec<Value> = r
            .topics
            .iter()
            .map(|t| {
                json!({
                    "topic": t.name,
                    "error": error_name(t.error_code),
                    "message": opt(&t.error_message),
                })
            })
            .collect();
        println!(
            "{}",
            json!({
                "mirror": mirror,
                "error": error_name(r.error_code),
                "message": opt(&r.error_message),
                "topics": topics,
            })
        );
    }
    if r.error_code != 0 {
        report_error(r.error_code, &r.error_message);
        return ExitCode::FAILURE;
    }
    for t in r.topics.iter().filter(|t| t.error_code != 0) {
        report_error(t.error_code, &t.error_message);
    }
    if !a.json {
        if r.topics.is_empty() {
            println!("No topic of cluster mirror {mirror} matched.");
        }
        for t in r.topics.iter().filter(|t| t.error_code == 0) {
            println!("Topic {} {verb} (cluster mirror {mirror}).", t.name);
        }
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

#[cfg(test)]
mod failover_report_tests {
    use super::*;
    use mirrorlog_mirror::failover_report::{FailoverReport, Side, UnreadableGroup};
    use mirrorlog_mirror::source::SourceError;

    #[test]
    fn an_unreadable_group_makes_the_report_incomplete_and_names_its_error() {
        let u = UnreadableGroup {
            group: "ledger".into(),
            cluster: Side::Source,
            error: SourceError::Kafka {
                code: 15,
                message: "COORDINATOR_NOT_AVAILABLE".into(),
            },
        };
        assert_eq!(
            unreadable_row(&u),
            (
                "ledger".to_string(),
                "source",
                Some(15),
                "COORDINATOR_NOT_AVAILABLE".to_string()
            )
        );
        let mut r = FailoverReport {
            exposures: vec![],
            unreadable: vec![],
        };
        assert_eq!(failover_report_status(&r), ExitCode::SUCCESS);
        r.unreadable.push(u);
        assert_eq!(
            failover_report_status(&r),
            ExitCode::from(FAILOVER_REPORT_INCOMPLETE)
        );
    }
}
