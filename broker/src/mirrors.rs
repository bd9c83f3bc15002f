//! Mirrors hosted by this broker: each [`MirrorManager`] copies topics from one source cluster
//! (reached through [`KafkaSource`]) into read-only topics of
//! this broker, which its topic registry serves like any other (produce refused with
//! READ_ONLY_TOPIC until the topic is stopped — failed over).
//!
//! # Durable mirror configs: `cluster-mirrors.json`
//!
//! A mirror created with [`Mirrors::create_durable`] (CreateClusterMirror) is recorded in
//! `<first data dir>/cluster-mirrors.json` and comes back on the next start
//! ([`Mirrors::restore`]); its partitions come back from `__mirror_state` in their states (a
//! MIRRORING partition resumes from its local log end), after a start a crash interrupted is
//! put back as it was before the start (its topic's configs, writability, or absence
//! included: `MirrorManager::start_topics`). A partition whose state lives in a
//! `__mirror_state` partition of an offline data directory comes back FAILED instead, naming the
//! directory, read-only and untouched (operator actions on its topic answer
//! KAFKA_STORAGE_ERROR) until a restart with the directory repaired; the mirror's other
//! partitions, and the other mirrors, run as usual. The file holds what the operator set
//! (plus the include/exclude patterns StartMirrorTopics added), never the defaults, so a
//! default changed in a later version applies on restart:
//!
//! ```text
//! {
//!   "version": 1,
//!   "mirrors": [
//!     { "name": "east", "configs": { "bootstrap.servers": "10.0.0.1:9092",
//!                                    "mirror.topics.include": "orders.*" } }
//!   ]
//! }
//! ```
//!
//! - `version` is 1; a reader refuses any other version rather than guess.
//! - `configs` maps a setting key to its value, both strings: the source client keys
//!   ([`SOURCE_KEYS`]) and the mirror keys (`MirrorConfig::KEYS`).
//! - The file is replaced atomically: written whole to `cluster-mirrors.json.tmp`, fsynced,
//!   renamed over the old one, and the directory fsynced; a crash leaves the old or the new
//!   file, never a mix (a stale `.tmp` is ignored and overwritten). Not checksummed: it is
//!   small, human-readable, and never half-written.
//! - Every change (create, delete, a pattern added) rewrites the file before it is answered.
//! - A deletion writes the mirror's deletion record to `__mirror_state` before it rewrites the
//!   file, and a start first finishes every deletion whose record it finds, taking such a
//!   mirror out of the file if it is still there ([`Mirrors::delete`]).

use crate::broker::Broker;
use crate::source_client::{KafkaSource, KafkaSourceConfig};
use crate::topics::{TopicError, topic_log_config};
use mirrorlog_engine::config::LogConfig;
use mirrorlog_index::TopicPartition;
use mirrorlog_index::{ErrorChain, TopicId};
use mirrorlog_mirror::claims::TopicClaims;
use mirrorlog_mirror::group_sync::GroupOffsetsSink;
use mirrorlog_mirror::manager::{
    ConfigsAtCreation, DestinationTopics, MirrorConfig, MirrorManager,
};
use mirrorlog_mirror::source::SourceCluster;
use mirrorlog_mirror::state::MirrorStateStore;
use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Weak};

/// The file in the first data dir that holds the mirrors' settings (see the module docs).
pub const MIRRORS_FILE: &str = "cluster-mirrors.json";

/// The version of [`MIRRORS_FILE`] this code writes and reads.
pub const MIRRORS_FILE_VERSION: u64 = 1;

/// Source connection keys a mirror accepts besides the mirror settings, with the
/// [`KafkaSourceConfig`] field each sets (defaults and ranges there).
pub const SOURCE_KEYS: &[&str] = &[
    "bootstrap.servers",
    "client.id",
    "request.timeout.ms",
    "socket.connection.setup.timeout.ms",
    "retry.backoff.ms",
    "retry.backoff.max.ms",
];

/// Every [`SOURCE_KEYS`] setting of `source` with its effective value (a default too), in that
/// order, as [`parse_mirror_configs`] reads them: what DescribeClusterMirrors lists, as Kafka's
/// DescribeConfigs lists a setting left at its default.
pub fn source_config_entries(source: &KafkaSourceConfig) -> Vec<(String, String)> {
    let values = [
        source.bootstrap_servers.join(","),
        source.client_id.clone(),
        source.request_timeout_ms.to_string(),
        source.connect_timeout_ms.to_string(),
        source.retry_backoff_ms.to_string(),
        source.retry_backoff_max_ms.to_string(),
    ];
    SOURCE_KEYS
        .iter()
        .zip(values)
        .map(|(k, v)| (k.to_string(), v))
        .collect()
}

/// Builds a mirror's settings and its source client's from `configs` (key → value).
///
/// # Errors
/// An unknown key, a value that does not parse or is out of range, or no `bootstrap.servers`;
/// the message names the key.
pub fn parse_mirror_configs(
    name: &str,
    configs: &BTreeMap<String, String>,
) -> Result<(MirrorConfig, KafkaSourceConfig), String> {
    let mut mirror = MirrorConfig::new(name);
    let mut source = KafkaSourceConfig::default();
    let num = |k: &str, v: &str| -> Result<u64, String> {
        v.trim()
            .parse::<u64>()
            .map_err(|e| format!("{k}: {v:?} is not a valid number: {e}"))
    };
    for (k, v) in configs {
        match k.as_str() {
            "bootstrap.servers" => {
                source.bootstrap_servers = v
                    .split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(str::to_string)
                    .collect()
            }
            "client.id" => source.client_id = v.clone(),
            "request.timeout.ms" => source.request_timeout_ms = num(k, v)?,
            "socket.connection.setup.timeout.ms" => source.connect_timeout_ms = num(k, v)?,
            "retry.backoff.ms" => source.retry_backoff_ms = num(k, v)?,
            "retry.backoff.max.ms" => source.retry_backoff_max_ms = num(k, v)?,
            _ => {
                if !mirror.set(k, v)? {
                    return Err(format!(
                        "unknown cluster mirror config {k:?}; known: {}, {}",
                        SOURCE_KEYS.join(", "),
                        MirrorConfig::KEYS.join(", ")
                    ));
                }
            }
        }
    }
    if source.bootstrap_servers.is_empty() {
        return Err("bootstrap.servers (the source cluster's host:port list) is required".into());
    }
    // The client must accept the largest answer the mirror asks for: the response bound, plus
    // one partition's first batch beyond it (Kafka's rule) and the frame's own fields. A smaller
    // frame limit refused every such answer, and the fetch was retried for ever.
    let asked = mirror.response_max_bytes.max(0) as usize
        + mirror.partition_fetch_max_bytes.max(0) as usize
        + (1 << 20);
    source.response_max_bytes = source.response_max_bytes.max(asked.min(i32::MAX as usize));
    source.validate()?;
    mirror.validate()?;
    Ok((mirror, source))
}

/// Reads [`MIRRORS_FILE`] in `dir`: `(name, configs)` per mirror; none when the file is absent.
///
/// # Errors
/// A file that does not parse or has another version.
pub fn read_mirrors_file(dir: &Path) -> anyhow::Result<Vec<(String, BTreeMap<String, String>)>> {
    let path = dir.join(MIRRORS_FILE);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(vec![]),
        Err(e) => return Err(anyhow::anyhow!("reading {}: {e}", path.display())),
    };
    let bad = |why: &str| anyhow::anyhow!("{}: {why}", path.display());
    let v: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| bad(&format!("not JSON: {e}")))?;
    match v.get("version").and_then(|v| v.as_u64()) {
        Some(MIRRORS_FILE_VERSION) => {}
        other => {
            return Err(bad(&format!(
                "version {other:?}; this build reads version {MIRRORS_FILE_VERSION}"
            )));
        }
    }
    let mut out = vec![];
    for m in v
        .get("mirrors")
        .and_then(|m| m.as_array())
        .ok_or_else(|| bad("no \"mirrors\" array"))?
    {
        let name = m
            .get("name")
            .and_then(|n| n.as_str())
            .ok_or_else(|| bad("a mirror without a \"name\" string"))?;
        let mut configs = BTreeMap::new();
        for (k, v) in m
            .get("configs")
            .and_then(|c| c.as_object())
            .ok_or_else(|| bad(&format!("mirror {name} has no \"configs\" object")))?
        {
            let v = v
                .as_str()
                .ok_or_else(|| bad(&format!("mirror {name}: config {k} is not a string")))?;
            configs.insert(k.clone(), v.to_string());
        }
        out.push((name.to_string(), configs));
    }
    Ok(out)
}

/// Replaces [`MIRRORS_FILE`] in `dir` atomically (see the module docs).
///
/// # Errors
/// A write, sync or rename failed (the old file is intact).
pub fn write_mirrors_file(
    dir: &Path,
    mirrors: &[(String, BTreeMap<String, String>)],
) -> std::io::Result<()> {
    use std::io::Write;
    let doc = serde_json::json!({
        "version": MIRRORS_FILE_VERSION,
        "mirrors": mirrors.iter().map(|(name, configs)| serde_json::json!({
            "name": name,
            "configs": configs,
        })).collect::<Vec<_>>(),
    });
    let text = serde_json::to_string_pretty(&doc).expect("a JSON value serialises");
    let tmp = dir.join(format!("{MIRRORS_FILE}.tmp"));
    {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(text.as_bytes())?;
        f.write_all(b"\n")?;
        f.sync_all()?;
    }
    std::fs::rename(&tmp, dir.join(MIRRORS_FILE))?;
    std::fs::File::open(dir)?.sync_all()
}

/// `__mirror_state` partitions on this broker (KIP-1279's `mirror.state.topic.num.partitions`
/// defaults to 50 across a cluster; one node needs fewer).
pub const MIRROR_STATE_PARTITIONS: i32 = 8;

/// Destination topics of a mirror, created in the broker's registry.
#[derive(Debug)]
pub struct BrokerTopics(Weak<Broker>);

impl BrokerTopics {
    /// The destination topics of `broker`, as its mirrors see them (held weakly: the broker
    /// owns its mirrors).
    pub fn new(broker: &Arc<Broker>) -> Self {
        BrokerTopics(Arc::downgrade(broker))
    }

    fn broker(&self) -> Result<Arc<Broker>, String> {
        self.0
            .upgrade()
            .ok_or_else(|| "the broker is shutting down".to_string())
    }

    /// Creates mirror topic `name` with `partitions` partitions, each with `cfg` (read-only).
    fn create_mirror_topic(
        &self,
        b: &Broker,
        name: &str,
        id: [u8; 16],
        partitions: i32,
        cfg: LogConfig,
    ) -> Result<(), String> {
        debug_assert!(cfg.read_only);
        // The source's topic id (spec §1: the same id on both sides), unless the source has
        // none or another local topic already holds it.
        let id = uuid::Uuid::from_bytes(id);
        let id = (!id.is_nil() && b.topics.by_id(id).is_none()).then_some(id);
        b.topics
            .create(&b.logs, name, partitions, cfg, id)
            .map(drop)
            .map_err(|e: TopicError| e.message)
    }
}

impl DestinationTopics for BrokerTopics {
    fn ensure_mirror_topic(&self, name: &str, id: [u8; 16], partitions: i32) -> Result<(), String> {
        let b = self.broker()?;
        match b.topics.get(name) {
            None => {
                let cfg = LogConfig {
                    read_only: true,
                    ..b.logs.default_log_config().clone()
                };
                self.create_mirror_topic(&b, name, id, partitions, cfg)?;
            }
            Some(t) => {
                // The first loaded partition's mark: partition 0 may be offline since start.
                let read_only =
                    topic_log_config(&b.logs, name, t.partitions).is_some_and(|c| c.read_only);
                let same_id =
                    !uuid::Uuid::from_bytes(id).is_nil() && t.id == uuid::Uuid::from_bytes(id);
                // A mirror topic with another (known) topic id is another source's topic,
                // which another mirror is filling: never a second writer of its partitions.
                // (Not when another local topic holds the source's id: then this mirror
                // created the topic under a fresh id itself.)
                let other_id = !uuid::Uuid::from_bytes(id).is_nil()
                    && !t.id.is_nil()
                    && t.id != uuid::Uuid::from_bytes(id)
                    && b.topics.by_id(uuid::Uuid::from_bytes(id)).is_none();
                if read_only && other_id {
                    return Err(format!(
                        "topic {name} is a mirror topic of another source topic on the destination (topic id {}, the source's is {})",
                        t.id,
                        uuid::Uuid::from_bytes(id)
                    ));
                }
                if !read_only {
                    // The source's own topic (same id): a failback, or mirroring a stopped topic
                    // again. It becomes a mirror topic; LOG_ALIGNMENT decides what it keeps.
                    if !same_id {
                        return Err(format!(
                            "topic {name} exists on the destination and is not a mirror topic (topic id {}, the source's is {})",
                            t.id,
                            uuid::Uuid::from_bytes(id)
                        ));
                    }
                    self.set_read_only(name, true)?;
                }
                if t.partitions < partitions {
                    b.topics
                        .add_partitions(&b.logs, name, partitions)
                        .map_err(|e| e.message)?;
                }
            }
        }
        Ok(())
    }

    fn ensure_mirror_topic_with_configs(
        &self,
        name: &str,
        id: [u8; 16],
        partitions: i32,
        configs: &[(String, String)],
    ) -> Result<ConfigsAtCreation, String> {
        let b = self.broker()?;
        if b.topics.get(name).is_some() {
            self.ensure_mirror_topic(name, id, partitions)?;
            return Ok(ConfigsAtCreation::NotApplied);
        }
        // The config `apply_topic_configs` would write over the new topic's defaults, given to
        // its creation instead: each partition's `topic.config` written once.
        let (set, refused) = source_configs_accepted(&b, name, configs);
        let created_with = LogConfig {
            read_only: true,
            ..b.logs.default_log_config().clone()
        }
        .with_topic_overrides(set.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        let Ok(cfg) = created_with else {
            // Accepted one by one, refused together: created with the defaults, and
            // `apply_topic_configs` says why as it always has.
            self.ensure_mirror_topic(name, id, partitions)?;
            return Ok(ConfigsAtCreation::NotApplied);
        };
        self.create_mirror_topic(&b, name, id, partitions, cfg)?;
        Ok(
            refused_message(&refused)
                .map_or(ConfigsAtCreation::Applied, ConfigsAtCreation::Refused),
        )
    }

    fn topic_name_for_id(&self, id: [u8; 16]) -> Option<String> {
        let b = self.broker().ok()?;
        b.topics
            .by_id(uuid::Uuid::from_bytes(id))
            .map(|t| t.name)
            .or_else(|| {
                b.logs
                    .partitions()
                    .into_iter()
                    .find(|h| h.topic_id() == TopicId(id))
                    .map(|h| h.topic_partition().topic.clone())
            })
    }

    fn remove_mirror_topic(&self, name: &str) -> Result<(), String> {
        let b = self.broker()?;
        // As DeleteTopics does: the coordinators drop its state before the name is free again,
        // parked fetches answer now.
        let deleted = b
            .topics
            .delete_then(&b.logs, name, None, |_| b.topic_deleted(name));
        b.appends.notify_topic(name);
        deleted.map(|_| ()).map_err(|e| e.message)
    }

    fn apply_topic_configs(
        &self,
        name: &str,
        configs: &[(String, String)],
        removed: &[String],
    ) -> Result<(), String> {
        let b = self.broker()?;
        // A key the source stopped setting takes the destination's default back.
        let defaults = b.logs.default_log_config().to_kafka_pairs();
        let resets: Vec<(String, String)> = removed
            .iter()
            .filter(|k| !configs.iter().any(|(c, _)| c == *k))
            .filter_map(|k| {
                defaults
                    .iter()
                    .find(|(d, _)| d == k)
                    .map(|(d, v)| (d.to_string(), v.clone()))
            })
            .collect();
        let (set, refused) = source_configs_accepted(&b, name, configs);
        let reset = supported_topic_configs(&resets);
        update_partition_configs(&b, name, |current| {
            // The source's topic overrides are this topic's own; reset keys are defaults again.
            let mut next = current
                .with_topic_overrides(set.iter().map(|(k, v)| (k.as_str(), v.as_str())))
                .and_then(|c| c.with_overrides(reset.iter().map(|(k, v)| (k.as_str(), v.as_str()))))
                .map_err(|e| e.to_string())?;
            next.overrides
                .retain(|k| !reset.iter().any(|(r, _)| r == k));
            // The mirror decides writability, never the source's configs.
            next.read_only = current.read_only;
            Ok(next)
        })?;
        match refused_message(&refused) {
            None => Ok(()),
            Some(e) => Err(e),
        }
    }

    fn topic_overrides(&self, name: &str) -> Vec<(String, String)> {
        let Ok(b) = self.broker() else {
            return Vec::new();
        };
        let Some(config) = b
            .topics
            .get(name)
            .and_then(|t| topic_log_config(&b.logs, name, t.partitions))
        else {
            return Vec::new();
        };
        let defaults = b.logs.default_log_config();
        config
            .to_kafka_pairs()
            .into_iter()
            .filter(|(k, _)| config.is_topic_override(k, defaults))
            .map(|(k, v)| (k.to_string(), v))
            .collect()
    }

    fn set_read_only(&self, name: &str, read_only: bool) -> Result<(), String> {
        let b = self.broker()?;
        update_partition_configs(&b, name, |current| {
            Ok(LogConfig {
                read_only,
                ..current.clone()
            })
        })
    }

    fn appended(&self, partitions: &[TopicPartition]) {
        if let Ok(b) = self.broker() {
            // Only the long polls on the partitions the mirror changed (Kafka's fetcher
            // completes the delayed fetches of those alone).
            for tp in partitions {
                b.appends.notify_partition(&tp.topic, tp.partition);
            }
        }
    }
}

/// The keys of `pairs` a topic here can hold.
fn supported_topic_configs(pairs: &[(String, String)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .filter(|(k, _)| LogConfig::SUPPORTED_TOPIC_KEYS.contains(&k.as_str()))
        .cloned()
        .collect()
}

/// The source's topic `configs` for topic `name` as this destination sets them: its compacted
/// policies mapped ([`keep_compacted_topics_whole`]), the keys it does not support left out, and
/// each value checked alone against the destination's defaults. Returns the accepted pairs and
/// the refused ones (`key=value (why)`).
fn source_configs_accepted(
    b: &Broker,
    name: &str,
    configs: &[(String, String)],
) -> (Vec<(String, String)>, Vec<String>) {
    let configs = keep_compacted_topics_whole(name, configs);
    // A value the destination refuses (one out of its range) must not keep the source's other
    // keys off the topic: refused as a whole set, a source's `retention.ms` of 30 days stayed
    // the destination's 7-day default, deleting records the source still holds for the
    // consumers that would fail over to them.
    let mut refused = vec![];
    let set = (supported_topic_configs(&configs).into_iter())
        .filter(|(k, v)| {
            let checked =
                (b.logs.default_log_config()).with_topic_overrides([(k.as_str(), v.as_str())]);
            if let Err(e) = &checked {
                refused.push(format!("{k}={v} ({e})"));
            }
            checked.is_ok()
        })
        .collect();
    (set, refused)
}

/// The error [`DestinationTopics::apply_topic_configs`] answers for the `refused` source
/// configs (none: no error).
fn refused_message(refused: &[String]) -> Option<String> {
    (!refused.is_empty()).then(|| {
        format!(
            "the source's other configs are applied; refused here: {}",
            refused.join(", ")
        )
    })
}

/// A source's `cleanup.policy` as this destination, which has no log compaction, keeps it: a
/// topic whose source never deletes by time or size keeps every record here too. `compact`
/// alone (Kafka never applies `retention.ms`/`retention.bytes` to it: Kafka Streams changelogs,
/// CDC tables) becomes the empty list, infinite retention; `compact,delete` becomes `delete`
/// (the source's retention limits apply on both sides). Either way the destination holds every
/// record the source holds, and the ones the source's cleaner removed since: more, never less.
/// Before, `compact` was refused and the topic kept the destination's `delete` with its 7-day
/// default, deleting a catch-up of a months-old changelog right after copying it.
fn destination_cleanup_policy(value: &str) -> Option<&'static str> {
    let items: Vec<&str> = value.split(',').map(str::trim).collect();
    if !items.contains(&"compact") {
        return None;
    }
    // Anything else listed: left to the parser to refuse as the malformed value it is.
    if !items.iter().all(|i| matches!(*i, "compact" | "delete")) {
        return None;
    }
    Some(if items.contains(&"delete") {
        "delete"
    } else {
        ""
    })
}

/// `configs` with a compacted source topic's `cleanup.policy` replaced by
/// [`destination_cleanup_policy`]'s, which the log names (the copy is whole, not compacted).
fn keep_compacted_topics_whole(name: &str, configs: &[(String, String)]) -> Vec<(String, String)> {
    (configs.iter())
        .map(|(k, v)| match destination_cleanup_policy(v) {
            Some(here) if k == "cleanup.policy" => {
                tracing::warn!(
                    topic = name,
                    "the source topic is compacted (cleanup.policy={v}); this destination does \
                     not compact: mirrored whole with cleanup.policy={here:?} (every record the \
                     source holds, and those its cleaner removes since, are kept)"
                );
                (k.clone(), here.to_owned())
            }
            _ => (k.clone(), v.clone()),
        })
        .collect()
}

/// Why a mirror-level operation failed, as the admin RPCs answer it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MirrorsError {
    /// CLUSTER_MIRROR_ALREADY_EXISTS.
    #[error("cluster mirror {0} already exists")]
    AlreadyExists(String),
    /// UNKNOWN_CLUSTER_MIRROR.
    #[error("cluster mirror {0} does not exist")]
    Unknown(String),
    /// INVALID_CONFIG.
    #[error("{0}")]
    InvalidConfig(String),
    /// CLUSTER_MIRROR_NOT_EMPTY.
    #[error(
        "cluster mirror {mirror} still has topics that are not stopped: {topics}; stop them first"
    )]
    NotEmpty {
        /// The mirror.
        mirror: String,
        /// The topics not stopped.
        topics: String,
    },
    /// Storage (`__mirror_state`, the mirrors file): KAFKA_STORAGE_ERROR.
    #[error("{0}")]
    Storage(String),
}

/// Sets every partition of topic `name` to `change(current config)`, writing only the partitions
/// whose config changes.
fn update_partition_configs(
    b: &Broker,
    name: &str,
    change: impl Fn(&LogConfig) -> Result<LogConfig, String>,
) -> Result<(), String> {
    let _serialised = b.topics.config_change_lock();
    let t = b
        .topics
        .get(name)
        .ok_or_else(|| format!("no topic {name}"))?;
    crate::topics::check_no_partition_offline(&b.logs, name, t.partitions, "change the config of")
        .map_err(|e| e.message)?;
    // The partitions of a topic normally share one config: `change` runs once per distinct
    // current config, and its result is cloned, so the partitions share its override set
    // (`TopicOverrides`) instead of holding one copy each.
    let mut last: Option<(LogConfig, LogConfig)> = None;
    for p in 0..t.partitions {
        let tp = TopicPartition {
            topic: name.into(),
            partition: p,
        };
        let h = b
            .logs
            .get(&tp)
            .ok_or_else(|| format!("no partition {tp}"))?;
        let current = h.read().config().clone();
        let next = match &last {
            Some((c, n)) if *c == current => n.clone(),
            _ => {
                let n = change(&current)?;
                last = Some((current.clone(), n.clone()));
                n
            }
        };
        if next != current {
            b.logs
                .update_config(&tp, next)
                .map_err(|e| ErrorChain(&e).to_string())?;
        }
    }
    Ok(())
}

/// The mirrors of one broker.
#[derive(Debug, Default)]
pub struct Mirrors {
    store: Mutex<Option<Arc<MirrorStateStore>>>,
    mirrors: Mutex<BTreeMap<String, Arc<MirrorManager>>>,
    /// Settings of the mirrors recorded in [`MIRRORS_FILE`] (the ones created through the admin
    /// RPCs), by name; the source's bootstrap servers of every mirror for the listings.
    durable: Mutex<BTreeMap<String, BTreeMap<String, String>>>,
    bootstrap: Mutex<BTreeMap<String, String>>,
    /// Where every mirror's group offset sync commits (the group coordinator, once installed).
    group_sink: SinkSlot,
    /// Serialises writes of [`MIRRORS_FILE`].
    file_writer: Mutex<()>,
    /// Which mirror owns each destination topic (one writer per topic), shared by every
    /// mirror. Its lock is its own and is held for a map lookup only (never while a mirror is
    /// called or a thread joined), so mirror threads use it freely while `shutdown`/`delete`
    /// hold `mirrors` and join them.
    claims: Arc<TopicClaims>,
}

/// The group offset sink, if installed.
#[derive(Default)]
struct SinkSlot(Mutex<Option<Arc<dyn GroupOffsetsSink>>>);

impl std::fmt::Debug for SinkSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.lock().is_some() {
            "SinkSlot(installed)"
        } else {
            "SinkSlot(none)"
        })
    }
}

impl Mirrors {
    /// Creates mirror `config.name` of `source` on `broker` and starts its threads. Not
    /// recorded in [`MIRRORS_FILE`]: an in-process mirror (the demo) with a source of the
    /// caller's making.
    ///
    /// # Errors
    /// A mirror of that name exists, an invalid config, or `__mirror_state` cannot be opened.
    pub fn create(
        &self,
        broker: &Arc<Broker>,
        config: MirrorConfig,
        source: Arc<dyn SourceCluster>,
    ) -> anyhow::Result<Arc<MirrorManager>> {
        broker.register_arc();
        let mut mirrors = self.mirrors.lock();
        let m = self.build_locked(&mut mirrors, broker, config, source)?;
        m.run();
        Ok(m)
    }

    fn file_dir(broker: &Broker) -> PathBuf {
        broker.config.logs.data_dirs[0].clone()
    }

    fn save(&self, broker: &Broker) -> Result<(), MirrorsError> {
        // One writer of the file at a time (they share its `.tmp`), and the snapshot taken under
        // the same lock, so the last write holds the latest settings.
        let _writer = self.file_writer.lock();
        let list: Vec<_> = self
            .durable
            .lock()
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        write_mirrors_file(&Self::file_dir(broker), &list)
            .map_err(|e| MirrorsError::Storage(format!("writing {MIRRORS_FILE}: {e}")))
    }

    /// CreateClusterMirror: checks `configs` ([`parse_mirror_configs`]), records the mirror in
    /// [`MIRRORS_FILE`], and starts it (no topics yet, unless `mirror.topics.include` is set).
    ///
    /// # Errors
    /// [`MirrorsError::AlreadyExists`], [`MirrorsError::InvalidConfig`],
    /// [`MirrorsError::Storage`].
    pub fn create_durable(
        &self,
        broker: &Arc<Broker>,
        name: &str,
        configs: BTreeMap<String, String>,
    ) -> Result<Arc<MirrorManager>, MirrorsError> {
        let mut mirrors = self.mirrors.lock();
        if mirrors.contains_key(name) {
            return Err(MirrorsError::AlreadyExists(name.into()));
        }
        let (config, source_config) =
            parse_mirror_configs(name, &configs).map_err(MirrorsError::InvalidConfig)?;
        let bootstrap = source_config.bootstrap_servers.join(",");
        let source = KafkaSource::new(source_config)
            .map_err(|e| MirrorsError::InvalidConfig(e.to_string()))?;
        // A deletion of an earlier mirror of this name left unfinished is finished before the
        // name is saved: with the name in the file and the deletion record both stored, a
        // restart would take this mirror for the deleted one and finish deleting it.
        let store = self
            .open_store(broker)
            .map_err(|e| MirrorsError::Storage(e.to_string()))?;
        if store.mirror_deletion_pending(name) {
            store
                .finish_mirror_deletion(name)
                .map_err(|e| MirrorsError::Storage(ErrorChain(&e).to_string()))?;
        }
        self.durable.lock().insert(name.into(), configs);
        if let Err(e) = self.save(broker) {
            self.durable.lock().remove(name);
            return Err(e);
        }
        match self.build_locked(&mut mirrors, broker, config, source) {
            Ok(m) => {
                m.run();
                self.bootstrap.lock().insert(name.into(), bootstrap);
                Ok(m)
            }
            Err(e) => {
                // Refused: it must not come back at the next start either.
                let removed = self.durable.lock().remove(name);
                if removed.is_some()
                    && let Err(save) = self.save(broker)
                {
                    tracing::error!(mirror = %name, "a cluster mirror that failed to start stays in {MIRRORS_FILE}: {save}");
                }
                Err(MirrorsError::Storage(ErrorChain(e.as_ref()).to_string()))
            }
        }
    }

    /// Starts every mirror recorded in [`MIRRORS_FILE`] (broker start). A mirror whose settings
    /// no longer parse is logged and skipped (it stays in the file). First, every deletion a
    /// crash cut short is finished ([`delete`](Self::delete)).
    ///
    /// Every mirror is built — its partitions restored from `__mirror_state` and their topics
    /// claimed — before any of them runs, in name order: no mirror's discovery can take a topic
    /// another mirror held before the restart, and when two mirrors both hold one topic (state
    /// an older build wrote), the one first by name keeps it and the other's partitions of it
    /// fail ([`MirrorManager::new_with_claims`]).
    ///
    /// # Errors
    /// The file cannot be read or does not parse.
    pub fn restore(&self, broker: &Arc<Broker>) -> anyhow::Result<usize> {
        let mut list = read_mirrors_file(&Self::file_dir(broker))?;
        list.sort_by(|a, b| a.0.cmp(&b.0));
        self.finish_deletions(broker, &mut list);
        let mut built = vec![];
        let mut mirrors = self.mirrors.lock();
        for (name, configs) in list {
            self.durable.lock().insert(name.clone(), configs.clone());
            let restored = parse_mirror_configs(&name, &configs).and_then(|(config, sc)| {
                let bootstrap = sc.bootstrap_servers.join(",");
                let source = KafkaSource::new(sc).map_err(|e| e.to_string())?;
                let m = self
                    .build_locked(&mut mirrors, broker, config, source)
                    .map_err(|e| ErrorChain(e.as_ref()).to_string())?;
                self.bootstrap.lock().insert(name.clone(), bootstrap);
                Ok(m)
            });
            match restored {
                Ok(m) => built.push(m),
                Err(e) => tracing::error!(mirror = %name, "cannot restore cluster mirror: {e}"),
            }
        }
        for m in &built {
            m.run();
        }
        let n = built.len();
        if n > 0 {
            tracing::info!(mirrors = n, "restored cluster mirrors from {MIRRORS_FILE}");
        }
        Ok(n)
    }

    /// Adds patterns to a mirror's `mirror.topics.include`/`exclude`, durably first.
    ///
    /// # Errors
    /// Unknown mirror, an invalid regex, or the file cannot be written.
    pub fn add_patterns(
        &self,
        broker: &Broker,
        name: &str,
        include: &[String],
        exclude: &[String],
    ) -> Result<(), MirrorsError> {
        // Held throughout: two additions must not interleave between file and memory.
        let mirrors = self.mirrors.lock();
        let m = mirrors
            .get(name)
            .cloned()
            .ok_or_else(|| MirrorsError::Unknown(name.into()))?;
        let (inc, exc) = m
            .patterns_with(include, exclude)
            .map_err(|e| MirrorsError::InvalidConfig(e.to_string()))?;
        // Durable first: patterns in force are always the ones a restart brings back.
        let previous = {
            let mut d = self.durable.lock();
            d.get_mut(name).map(|c| {
                let before = c.clone();
                c.insert("mirror.topics.include".into(), inc.join(","));
                c.insert("mirror.topics.exclude".into(), exc.join(","));
                before
            })
        };
        if let Some(before) = previous
            && let Err(e) = self.save(broker)
        {
            self.durable.lock().insert(name.into(), before);
            return Err(e);
        }
        m.set_patterns(inc, exc)
            .map_err(|e| MirrorsError::InvalidConfig(e.to_string()))
    }

    /// DeleteClusterMirror: refused while a partition of the mirror is not STOPPED (MM13:
    /// "active or non-stopped"); otherwise writes its deletion record to `__mirror_state`,
    /// removes it from [`MIRRORS_FILE`], stops its threads and tombstones its `__mirror_state`
    /// records, the deletion record last. Its (stopped, writable) topics stay. A crash after
    /// the deletion record leaves a deletion the next start finishes ([`restore`](Self::restore));
    /// before it, the mirror as it was.
    ///
    /// Refused too (storage error) while a `__mirror_state` partition is not loaded (offline
    /// data dir): states of the mirror may be there, not known to be STOPPED, and could not be
    /// tombstoned; left behind, a mirror created later under the same name would restore them.
    ///
    /// # Errors
    /// [`MirrorsError::Unknown`], [`MirrorsError::NotEmpty`], [`MirrorsError::Storage`].
    pub fn delete(&self, broker: &Broker, name: &str) -> Result<(), MirrorsError> {
        let mut mirrors = self.mirrors.lock();
        let m = mirrors
            .get(name)
            .cloned()
            .ok_or_else(|| MirrorsError::Unknown(name.into()))?;
        let unavailable = self
            .store
            .lock()
            .as_ref()
            .map(|s| s.unavailable_partitions())
            .unwrap_or_default();
        if let Some((p, dir)) = unavailable.first() {
            return Err(MirrorsError::Storage(format!(
                "cluster mirror {name} cannot be deleted while __mirror_state-{p} is not loaded \
                 (data dir {} is offline): states of the mirror there could not be deleted",
                dir.display()
            )));
        }
        // Checked and closed to new topics in one step, so a topic discovery starts meanwhile
        // cannot be left read-only with no mirror to stop it.
        if let Err(active) = m.close_to_new_topics() {
            return Err(MirrorsError::NotEmpty {
                mirror: name.into(),
                topics: active.join(", "),
            });
        }
        // The deletion record first, durably: from it on the deletion is decided, and a
        // restart finishes it whatever a crash left (`restore`). Taken out of the file first,
        // a crash before the record left every record of the mirror, start intents included,
        // to a mirror created again under the name. A failed write may still have reached the
        // disk, so the mirror stays closed to new topics (a restart finishes the deletion or
        // brings the mirror back; DeleteClusterMirror may be retried meanwhile).
        let store = self
            .open_store(broker)
            .map_err(|e| MirrorsError::Storage(e.to_string()))?;
        store
            .put_mirror_deletion(name)
            .map_err(|e| MirrorsError::Storage(ErrorChain(&e).to_string()))?;
        let removed = self.durable.lock().remove(name);
        if removed.is_some()
            && let Err(e) = self.save(broker)
        {
            // Still closed, and deleted at the next start (the record stays).
            self.durable
                .lock()
                .insert(name.into(), removed.unwrap_or_default());
            return Err(e);
        }
        mirrors.remove(name);
        self.bootstrap.lock().remove(name);
        m.shutdown();
        // Its topics are all STOPPED, so it owns none; released all the same, and even if a
        // tombstone fails below (the mirror is gone either way).
        self.claims.release_all(name);
        m.delete_states()
            .map_err(|e| MirrorsError::Storage(ErrorChain(&e).to_string()))?;
        Ok(())
    }

    /// Sets where mirrors started from now on commit synced group offsets.
    pub fn set_group_sink(&self, sink: Arc<dyn GroupOffsetsSink>) {
        *self.group_sink.0.lock() = Some(sink);
    }

    /// The source's `bootstrap.servers` of a mirror (empty for an in-process one).
    pub fn source_bootstrap(&self, name: &str) -> String {
        self.bootstrap.lock().get(name).cloned().unwrap_or_default()
    }

    /// A durable mirror's settings as stored (empty for an in-process one).
    pub fn stored_configs(&self, name: &str) -> BTreeMap<String, String> {
        self.durable.lock().get(name).cloned().unwrap_or_default()
    }

    /// The mirror that owns destination topic `topic` (mirrors it, not STOPPED), if any.
    pub fn topic_owner(&self, topic: &str) -> Option<String> {
        self.claims.owner(topic)
    }

    /// Builds mirror `config.name` (its partitions restored and their topics claimed) and adds
    /// it to `mirrors`; the caller runs it.
    fn build_locked(
        &self,
        mirrors: &mut BTreeMap<String, Arc<MirrorManager>>,
        broker: &Arc<Broker>,
        config: MirrorConfig,
        source: Arc<dyn SourceCluster>,
    ) -> anyhow::Result<Arc<MirrorManager>> {
        anyhow::ensure!(
            !mirrors.contains_key(&config.name),
            "cluster mirror {} already exists",
            config.name
        );
        let mut config = config;
        if config.local_cluster_id.is_none() {
            config.local_cluster_id = Some(broker.cluster_id.clone());
        }
        let store = self.open_store(broker)?;
        let name = config.name.clone();
        let m = MirrorManager::new_with_claims(
            config,
            source,
            broker.logs.clone(),
            Arc::new(BrokerTopics(Arc::downgrade(broker))),
            store,
            broker.clock().clone(),
            self.claims.clone(),
        )
        .map_err(|e| anyhow::anyhow!("{e}"))?;
        if let Some(sink) = self.group_sink.0.lock().clone() {
            m.set_group_sink(sink);
        }
        mirrors.insert(name, m.clone());
        Ok(m)
    }

    /// The `__mirror_state` store, opened (and the topic created) on first use.
    fn open_store(&self, broker: &Broker) -> anyhow::Result<Arc<MirrorStateStore>> {
        let mut s = self.store.lock();
        if let Some(st) = &*s {
            return Ok(st.clone());
        }
        let st = Arc::new(MirrorStateStore::open(
            broker.logs.clone(),
            MIRROR_STATE_PARTITIONS,
        )?);
        broker.topics.refresh(&broker.logs);
        *s = Some(st.clone());
        Ok(st)
    }

    /// Finishes at start every mirror deletion a crash cut short (its deletion record is in
    /// `__mirror_state`, see [`delete`](Self::delete)): such a mirror still in `list` is taken
    /// out of it and of [`MIRRORS_FILE`], then its records are tombstoned. Nothing is opened
    /// when there is no mirror to restore and no `__mirror_state` topic.
    fn finish_deletions(
        &self,
        broker: &Broker,
        list: &mut Vec<(String, BTreeMap<String, String>)>,
    ) {
        let has_states = (broker.logs.partitions().iter())
            .any(|h| h.topic_partition().topic == mirrorlog_mirror::state::MIRROR_STATE_TOPIC);
        if list.is_empty() && !has_states {
            return;
        }
        let store = match self.open_store(broker) {
            Ok(st) => st,
            // The mirrors' builds report it.
            Err(_) => return,
        };
        let mut pending = store.pending_mirror_deletions();
        let in_file: Vec<String> = (list.iter())
            .map(|(name, _)| name.clone())
            .filter(|name| pending.contains(name))
            .collect();
        if !in_file.is_empty() {
            list.retain(|(name, _)| !pending.contains(name));
            if let Err(e) = write_mirrors_file(&Self::file_dir(broker), list) {
                tracing::error!(
                    "taking deleted cluster mirrors {pending:?} out of {MIRRORS_FILE}: {e}"
                );
                // Not restored all the same; the records of those that may still be in the file
                // stay until a start takes them out of it or a save of the file does (finished,
                // a restart would bring the mirror back without its states).
                pending.retain(|name| !in_file.contains(name));
            }
        }
        for name in pending {
            tracing::warn!(mirror = %name, "finishing the deletion of a cluster mirror, which a crash cut short");
            if let Err(e) = store.finish_mirror_deletion(&name) {
                tracing::error!(mirror = %name, "cannot finish the deletion of cluster mirror (a mirror created under its name is refused until it is finished): {}", ErrorChain(&e));
            }
        }
    }

    /// The `__mirror_state` store, once a mirror has opened it.
    pub fn state_store(&self) -> Option<Arc<MirrorStateStore>> {
        self.store.lock().clone()
    }

    /// A mirror by name.
    pub fn get(&self, name: &str) -> Option<Arc<MirrorManager>> {
        self.mirrors.lock().get(name).cloned()
    }

    /// All mirrors.
    pub fn all(&self) -> Vec<Arc<MirrorManager>> {
        self.mirrors.lock().values().cloned().collect()
    }

    /// Stops every mirror's threads (partitions keep their states).
    pub fn shutdown(&self) {
        for m in std::mem::take(&mut *self.mirrors.lock()).into_values() {
            m.shutdown();
        }
        self.store.lock().take();
        // The sink holds the group coordinator, which holds the log manager: let both go.
        self.group_sink.0.lock().take();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn configs(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn a_compacted_source_policy_keeps_every_record_here() {
        for (source, here) in [
            ("compact", Some("")),
            (" compact ", Some("")),
            ("compact,compact", Some("")),
            ("compact,delete", Some("delete")),
            ("delete, compact", Some("delete")),
            ("delete", None),
            ("", None),
            ("compact,forever", None),
        ] {
            assert_eq!(destination_cleanup_policy(source), here, "{source:?}");
        }
    }

    #[test]
    fn the_mirrors_file_round_trips_and_refuses_other_versions() {
        let dir = tempfile::tempdir().unwrap();
        assert!(
            read_mirrors_file(dir.path()).unwrap().is_empty(),
            "absent: none"
        );
        let list = vec![
            (
                "east".to_string(),
                configs(&[
                    ("bootstrap.servers", "a:1"),
                    ("mirror.topics.include", "o.*"),
                ]),
            ),
            ("west".to_string(), configs(&[("bootstrap.servers", "b:2")])),
        ];
        write_mirrors_file(dir.path(), &list).unwrap();
        assert_eq!(read_mirrors_file(dir.path()).unwrap(), list);
        assert!(!dir.path().join(format!("{MIRRORS_FILE}.tmp")).exists());
        std::fs::write(
            dir.path().join(MIRRORS_FILE),
            r#"{"version": 2, "mirrors": []}"#,
        )
        .unwrap();
        let e = read_mirrors_file(dir.path()).unwrap_err().to_string();
        assert!(e.contains("version Some(2)"), "{e}");
        std::fs::write(
            dir.path().join(MIRRORS_FILE),
            r#"{"version": 1, "mirrors": [{"name": "x", "configs": {"k": 1}}]}"#,
        )
        .unwrap();
        let e = read_mirrors_file(dir.path()).unwrap_err().to_string();
        assert!(e.contains("config k is not a string"), "{e}");
    }

    /// A mirror topic removed from the destination (its mirror failed over or was deleted)
    /// let go of the name before the coordinators dropped the topic's offsets, as DeleteTopics
    /// did: offsets committed in between to a topic created again under it went too.
    #[test]
    fn offsets_committed_to_a_topic_created_again_during_a_mirror_topic_removal_stay() {
        let dir = tempfile::tempdir().unwrap();
        let (b, old, racing) = crate::handlers::admin::tests::RacingGroups::install(dir.path());
        BrokerTopics(Arc::downgrade(&b))
            .remove_mirror_topic("t")
            .unwrap();
        racing.recreate_unless_raced(&b);
        assert_ne!(b.topics.get("t").map(|t| t.id), Some(old));
        assert_eq!(
            racing.committed(),
            Some(1),
            "the offset committed to the topic created again was dropped with the old topic's"
        );
    }

    #[test]
    fn mirror_configs_split_into_source_and_mirror_settings() {
        let (m, s) = parse_mirror_configs(
            "m",
            &configs(&[
                ("bootstrap.servers", "a:1, b:2"),
                ("client.id", "mm"),
                ("mirror.num.replica.fetchers", "2"),
            ]),
        )
        .unwrap();
        assert_eq!(s.bootstrap_servers, vec!["a:1", "b:2"]);
        assert_eq!(s.client_id, "mm");
        assert_eq!(m.fetcher_threads, 2);
        let e = parse_mirror_configs("m", &configs(&[("client.id", "x")])).unwrap_err();
        assert!(e.contains("bootstrap.servers"), "{e}");
        let e = parse_mirror_configs(
            "m",
            &configs(&[("bootstrap.servers", "a:1"), ("colour", "x")]),
        )
        .unwrap_err();
        assert!(
            e.contains("unknown cluster mirror config \"colour\""),
            "{e}"
        );
        let e =
            parse_mirror_configs("m", &configs(&[("bootstrap.servers", "nohost")])).unwrap_err();
        assert!(e.contains("bootstrap.servers"), "{e}");
    }

    #[test]
    fn source_config_entries_name_every_source_key_and_read_back() {
        let set = configs(&[
            ("bootstrap.servers", "a:1,b:2"),
            ("client.id", "mm"),
            ("request.timeout.ms", "5000"),
            ("socket.connection.setup.timeout.ms", "2000"),
            ("retry.backoff.ms", "7"),
            ("retry.backoff.max.ms", "70"),
        ]);
        let (_, source) = parse_mirror_configs("m", &set).unwrap();
        let entries = source_config_entries(&source);
        let keys: Vec<&str> = entries.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, SOURCE_KEYS);
        assert_eq!(entries.into_iter().collect::<BTreeMap<_, _>>(), set);
        // Unset: the defaults.
        let (_, source) =
            parse_mirror_configs("m", &configs(&[("bootstrap.servers", "a:1")])).unwrap();
        assert_eq!(
            source_config_entries(&source)[1..],
            [
                ("client.id".to_string(), "mirrorlog-mirror".to_string()),
                ("request.timeout.ms".into(), "30000".into()),
                ("socket.connection.setup.timeout.ms".into(), "10000".into()),
                ("retry.backoff.ms".into(), "100".into()),
                ("retry.backoff.max.ms".into(), "1000".into()),
            ]
        );
    }
}
