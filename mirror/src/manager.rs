//! One mirror: the partitions it copies from one source cluster, their state machines, the
//! fetcher threads and the metadata sync.
//!
//! - **Fetchers**: `fetcher_threads` per source node, as Kafka's `AbstractFetcherManager`
//!   keeps `num.replica.fetchers` per source broker: a MIRRORING partition belongs to the
//!   fetcher (its source leader, `hash(topic, partition) % threads`). A pool loop of
//!   [`MirrorManager::run`] hands each fetcher its partitions, starts a fetcher when the first
//!   partition comes to it and stops one that has had none for [`FETCHER_IDLE_MS`], so a slow,
//!   down or long-polling source node holds only its own partitions' fetches. A partition whose
//!   leader moves changes fetchers; its new fetcher asks from the log end (a leader change also
//!   makes it truncating, below), and the old one drops its cursor for it. Each fetcher sends
//!   one fetch at a time to its node, bounded by `response_max_bytes` (and
//!   `partition_fetch_max_bytes` per partition), so fetcher memory stays within
//!   threads × source nodes × response bytes whatever the partition count (DESIGN invariant
//!   7; the source nodes are those leading a mirrored partition). Fetched batches go to the
//!   engine's mirror append as they arrived ([`crate::partition::apply_fetched`]).
//!   Each fetcher thread is pipelined with an applier thread: it asks for the next answers (past
//!   the last whole batch of the one before, [`crate::partition::next_fetch_position`]) while the
//!   applier appends earlier ones, within what those leave of the response bytes; an
//!   answer is applied only at the fetch offset it was asked for, so a skipped, failed or
//!   diverging answer never leaves a gap, and its partition is fetched from its log end again
//!   — nor do two fetchers' answers for a partition whose leader moved: whichever is applied
//!   first moves the log end past the other's fetch offset.
//!   A source whose fetches cannot report a divergence (Fetch below v12) is first asked where a
//!   partition's latest epoch ends (OffsetForLeaderEpoch) when it enters MIRRORING and after
//!   its source leader changes, as Kafka's fetcher does with such a leader — also when a fetch
//!   answer brings records of a source leader epoch the mirror has not heard of yet (the
//!   answer is then fetched again once checked), where Kafka's leader fences the fetch.
//! - **State machine**: every move goes through [`PartitionMirrorState::transition`] (the table
//!   of `state.rs`) and is persisted in `__mirror_state` before it takes effect; a per-partition
//!   lock serialises the fetcher and operator actions (stop, pause) on a partition, so no
//!   mirrored batch is appended once a stop has begun.
//! - **Sync** (every `metadata_refresh_interval_ms`): source leaders and epochs, a changed source
//!   cluster id, deleted source topics (missing on two consecutive syncs), partition-count
//!   increases, and retries of FAILED partitions whose backoff elapsed. A fetch answered "not
//!   the leader" (or one its node did not answer), or a partition without a source leader, has
//!   the source's leaders asked at once, as Kafka's consumer does, at most once per 100 ms.
//! - **Leader epochs** (DLE ≥ SLE, KIP-1279 §7): the destination partition's leader epoch is
//!   bumped to the source's + 10 once the source's comes within 3 of it — on a fetched batch
//!   before it is appended (reactive, proactive), on every sync (periodic) — through
//!   EPOCH_FENCING, and persisted in `__mirror_state`, from which a restart raises it again.
//! - **Failure isolation**: a corrupt batch, a deleted source topic, a changed cluster id or a
//!   divergence with unclean-election support off move that partition alone to FAILED.
//! - **One writer per topic**: a topic is claimed in the [`TopicClaims`] the broker's mirrors
//!   share before it is started (by name, pattern, discovery, recover or restore) and released
//!   once all its partitions are STOPPED; only the owner fetches into, aligns, bumps or stops
//!   its log. Another mirror's start fails with [`MirrorError::HeldByAnotherMirror`].

use crate::claims::TopicClaims;
use crate::group_sync::{GroupOffsetsSink, GroupSyncReport, sync_group_offsets_where};
use crate::partition::{
    FetchOutcome, NextFetch, align_to_last_mirror_epoch, apply_fetched, epoch_bump_target,
    fetch_position, is_leader_change_error, last_mirrored_epoch, next_fetch_position,
    stop_partition_after,
};
use crate::source::{
    FetchRequest, FetchResponse, PartitionData, PartitionFetch, SourceCluster, SourceError,
    SourcePartition,
};
use crate::state::{
    MirrorPartitionState as S, MirrorStateStore, PartitionMirrorState, RetryBackoff, StartIntent,
    StateError, StateKey, TopicBefore,
};
use mirrorlog_engine::clock::Clock;
use mirrorlog_engine::epoch_cache::truncation_for_leader_answer;
use mirrorlog_engine::error::EngineError;
use mirrorlog_engine::manager::{LogManager, PartitionHandle};
use mirrorlog_index::{ErrorChain, LeaderEpoch, Offset, ProducerEpoch, ProducerId, TopicPartition};
use parking_lot::Mutex;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

/// One mirror's settings (KIP-1279 §6 names where one exists).
#[derive(Debug, Clone)]
pub struct MirrorConfig {
    /// The mirror's name.
    pub name: String,
    /// `mirror.num.replica.fetchers`: fetcher threads per source node (each with an applier
    /// thread), as Kafka's `num.replica.fetchers` per source broker; fetcher memory is bounded by
    /// this × the source nodes leading mirrored partitions × `fetch.response.max.bytes`.
    /// Default 1; range 1 ..= 64.
    pub fetcher_threads: usize,
    /// Per-partition fetch size (`fetch.max.bytes` per partition). Default 1 MiB; range
    /// 1 KiB ..= `response_max_bytes`.
    pub partition_fetch_max_bytes: i32,
    /// Whole-response fetch size (`fetch.response.max.bytes`). Default 16 MiB; range
    /// 1 KiB ..= 1 GiB.
    pub response_max_bytes: i32,
    /// `fetch.wait.max.ms`: how long the source may hold a fetch with nothing to answer (long
    /// poll). Default 500; range 0 ..= 30000.
    pub max_wait_ms: i32,
    /// `mirror.metadata.refresh.interval.ms`. Default 5000; range 100 ..= 3600000.
    pub metadata_refresh_interval_ms: i64,
    /// `mirror.support.unclean.leader.election`. Default false: a divergence on the source
    /// fails the partition instead of truncating.
    pub support_unclean_leader_election: bool,
    /// `mirror.failed.retry.*`.
    pub retry: RetryBackoff,
    /// `mirror.topics.include`: regexes (each matched against the whole topic name); source
    /// topics matching one, and no exclude pattern, are discovered and started on every
    /// metadata refresh. Default empty (only topics started by name). Any valid regex.
    pub topics_include: Vec<String>,
    /// `mirror.topics.exclude`: regexes; a topic matching one is never started, by pattern or
    /// by name (exclude wins over include). Default `__.*` (internal topics).
    pub topics_exclude: Vec<String>,
    /// `mirror.topic.properties.exclude`: regexes over topic config names not copied from the
    /// source. Default: the spec's list ([`DEFAULT_TOPIC_PROPERTIES_EXCLUDE`]).
    pub topic_properties_exclude: Vec<String>,
    /// `mirror.groups.include`: regexes over consumer group ids whose committed offsets are
    /// synced (clamped, see `group_sync`) on every metadata refresh. Default `.*`.
    pub groups_include: Vec<String>,
    /// `mirror.groups.exclude`: regexes; wins over include. Default empty.
    pub groups_exclude: Vec<String>,
    /// The destination's own cluster id, which LOG_ALIGNMENT sends the source to ask for the
    /// last mirror epoch of a mirror in the other direction (failback). Not a user setting: the
    /// broker fills it in. `None` (default): never ask; align to empty.
    pub local_cluster_id: Option<String>,
    /// How long (ms) the threads of [`MirrorManager::run`] (the sync thread, which drives
    /// partitions through LOG_ALIGNMENT and retries, and the fetcher pool loop) wait between
    /// passes when nothing wakes them: a start wakes the sync thread, and a partition reaching
    /// MIRRORING wakes the pool, so a started topic is fetched without waiting for a pass. Not
    /// a user setting. Default 50; range 1 ..= 3600000 (tests set it long to show that nothing
    /// waits for it).
    pub pass_interval_ms: u64,
}

/// Default of [`MirrorConfig::topics_exclude`].
pub const DEFAULT_TOPICS_EXCLUDE: &[&str] = &["__.*"];

/// Default of [`MirrorConfig::topic_properties_exclude`] (spec §6): the settings that must stay
/// local to the destination (throttles, timestamp bounds checked only by a leader append,
/// election and ISR settings, the mirror's own switches).
pub const DEFAULT_TOPIC_PROPERTIES_EXCLUDE: &[&str] = &[
    "follower\\.replication\\.throttled\\.replicas",
    "leader\\.replication\\.throttled\\.replicas",
    "message\\.timestamp\\.difference\\.max\\.ms",
    "message\\.timestamp\\.before\\.max\\.ms",
    "message\\.timestamp\\.after\\.max\\.ms",
    "log\\.message\\.timestamp\\.before\\.max\\.ms",
    "log\\.message\\.timestamp\\.after\\.max\\.ms",
    "message\\.timestamp\\.type",
    "unclean\\.leader\\.election\\.enable",
    "min\\.insync\\.replicas",
    "mirror\\.replication\\.throttled\\.replicas",
    "mirror\\.support\\.unclean\\.leader\\.election",
];

/// Compiles a pattern list, each anchored to match a whole name (Java's `Matcher.matches`).
///
/// # Errors
/// A pattern that is not a valid regex, naming the setting.
pub fn compile_patterns(setting: &str, patterns: &[String]) -> Result<Vec<regex::Regex>, String> {
    patterns
        .iter()
        .map(|p| {
            regex::Regex::new(&format!("^(?:{p})$"))
                .map_err(|e| format!("{setting}: {p:?} is not a valid regex: {e}"))
        })
        .collect()
}

fn split_list(value: &str) -> Vec<String> {
    value
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

impl MirrorConfig {
    /// Defaults for a mirror called `name`.
    pub fn new(name: &str) -> MirrorConfig {
        MirrorConfig {
            name: name.to_string(),
            fetcher_threads: 1,
            partition_fetch_max_bytes: 1 << 20,
            response_max_bytes: 16 << 20,
            max_wait_ms: 500,
            metadata_refresh_interval_ms: 5000,
            support_unclean_leader_election: false,
            retry: RetryBackoff::default(),
            topics_include: vec![],
            topics_exclude: DEFAULT_TOPICS_EXCLUDE
                .iter()
                .map(|s| s.to_string())
                .collect(),
            topic_properties_exclude: DEFAULT_TOPIC_PROPERTIES_EXCLUDE
                .iter()
                .map(|s| s.to_string())
                .collect(),
            groups_include: vec![".*".to_string()],
            groups_exclude: vec![],
            local_cluster_id: None,
            pass_interval_ms: 50,
        }
    }

    /// The mirror-level setting keys [`set`](Self::set) knows.
    pub const KEYS: &'static [&'static str] = &[
        "mirror.num.replica.fetchers",
        "fetch.max.bytes",
        "fetch.response.max.bytes",
        "fetch.wait.max.ms",
        "mirror.metadata.refresh.interval.ms",
        "mirror.support.unclean.leader.election",
        "mirror.failed.retry.initial.backoff.ms",
        "mirror.failed.retry.max.backoff.ms",
        "mirror.failed.retry.max.attempts",
        "mirror.topics.include",
        "mirror.topics.exclude",
        "mirror.topic.properties.exclude",
        "mirror.groups.include",
        "mirror.groups.exclude",
    ];

    /// Applies one setting by its KIP-1279 key. Lists are comma-separated (so a pattern cannot
    /// hold a comma; use `(a|b)` instead). Returns `Ok(false)` for a key that is not a mirror
    /// setting (the caller may know it, e.g. `bootstrap.servers`); ranges are checked by
    /// [`validate`](Self::validate).
    ///
    /// # Errors
    /// A value that does not parse, naming the key.
    pub fn set(&mut self, key: &str, value: &str) -> Result<bool, String> {
        fn num<T: std::str::FromStr>(key: &str, value: &str) -> Result<T, String>
        where
            T::Err: fmt::Display,
        {
            value
                .trim()
                .parse()
                .map_err(|e| format!("{key}: {value:?} is not a valid number: {e}"))
        }
        match key {
            "mirror.num.replica.fetchers" => self.fetcher_threads = num(key, value)?,
            "fetch.max.bytes" => self.partition_fetch_max_bytes = num(key, value)?,
            "fetch.response.max.bytes" => self.response_max_bytes = num(key, value)?,
            "fetch.wait.max.ms" => self.max_wait_ms = num(key, value)?,
            "mirror.metadata.refresh.interval.ms" => {
                self.metadata_refresh_interval_ms = num(key, value)?
            }
            "mirror.support.unclean.leader.election" => {
                // As Kafka's `ConfigDef` BOOLEAN: `true` or `false` in any case.
                self.support_unclean_leader_election =
                    match value.trim().to_ascii_lowercase().as_str() {
                        "true" => true,
                        "false" => false,
                        _ => return Err(format!("{key}: {:?} is not true or false", value.trim())),
                    }
            }
            "mirror.failed.retry.initial.backoff.ms" => {
                self.retry.initial_backoff_ms = num(key, value)?
            }
            "mirror.failed.retry.max.backoff.ms" => self.retry.max_backoff_ms = num(key, value)?,
            "mirror.failed.retry.max.attempts" => self.retry.max_attempts = num(key, value)?,
            "mirror.topics.include" => self.topics_include = split_list(value),
            "mirror.topics.exclude" => self.topics_exclude = split_list(value),
            "mirror.topic.properties.exclude" => self.topic_properties_exclude = split_list(value),
            "mirror.groups.include" => self.groups_include = split_list(value),
            "mirror.groups.exclude" => self.groups_exclude = split_list(value),
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// Every mirror-level setting as `(key, value)`, in [`KEYS`](Self::KEYS) order.
    pub fn entries(&self) -> Vec<(String, String)> {
        let v = [
            self.fetcher_threads.to_string(),
            self.partition_fetch_max_bytes.to_string(),
            self.response_max_bytes.to_string(),
            self.max_wait_ms.to_string(),
            self.metadata_refresh_interval_ms.to_string(),
            self.support_unclean_leader_election.to_string(),
            self.retry.initial_backoff_ms.to_string(),
            self.retry.max_backoff_ms.to_string(),
            self.retry.max_attempts.to_string(),
            self.topics_include.join(","),
            self.topics_exclude.join(","),
            self.topic_properties_exclude.join(","),
            self.groups_include.join(","),
            self.groups_exclude.join(","),
        ];
        Self::KEYS
            .iter()
            .zip(v)
            .map(|(k, v)| (k.to_string(), v))
            .collect()
    }

    /// Rejects out-of-range settings.
    ///
    /// # Errors
    /// A message naming the setting.
    pub fn validate(&self) -> Result<(), String> {
        if self.name.is_empty() || self.name.len() > 249 {
            return Err(format!(
                "mirror name {:?} must be 1..=249 characters",
                self.name
            ));
        }
        if !(1..=64).contains(&self.fetcher_threads) {
            return Err(format!(
                "mirror.num.replica.fetchers {} is outside 1..=64",
                self.fetcher_threads
            ));
        }
        if !(1024..=1 << 30).contains(&self.response_max_bytes) {
            return Err(format!(
                "fetch.response.max.bytes {} is outside 1024..=1073741824",
                self.response_max_bytes
            ));
        }
        if !(1024..=self.response_max_bytes).contains(&self.partition_fetch_max_bytes) {
            return Err(format!(
                "fetch.max.bytes {} is outside 1024..=fetch.response.max.bytes",
                self.partition_fetch_max_bytes
            ));
        }
        if !(0..=30_000).contains(&self.max_wait_ms) {
            return Err(format!(
                "fetch.wait.max.ms {} is outside 0..=30000",
                self.max_wait_ms
            ));
        }
        if !(100..=3_600_000).contains(&self.metadata_refresh_interval_ms) {
            return Err(format!(
                "mirror.metadata.refresh.interval.ms {} is outside 100..=3600000",
                self.metadata_refresh_interval_ms
            ));
        }
        if !(1..=3_600_000).contains(&self.pass_interval_ms) {
            return Err(format!(
                "the mirror's pass interval {} ms is outside 1..=3600000",
                self.pass_interval_ms
            ));
        }
        compile_patterns("mirror.topics.include", &self.topics_include)?;
        compile_patterns("mirror.topics.exclude", &self.topics_exclude)?;
        compile_patterns(
            "mirror.topic.properties.exclude",
            &self.topic_properties_exclude,
        )?;
        compile_patterns("mirror.groups.include", &self.groups_include)?;
        compile_patterns("mirror.groups.exclude", &self.groups_exclude)?;
        self.retry.validate().map_err(|e| e.to_string())
    }
}

/// How the mirror creates and configures its read-only destination topics (the broker
/// implements it with its topic registry; tests with the log manager alone).
pub trait DestinationTopics: Send + Sync + fmt::Debug {
    /// Makes sure topic `name` exists with at least `partitions` partitions and is read-only;
    /// a new topic gets the source's topic id `id` (the same id on both sides, spec §1) unless
    /// it is all zeros (a source without topic ids).
    ///
    /// # Errors
    /// The topic cannot be created (e.g. a local topic of that name that is not a mirror).
    fn ensure_mirror_topic(&self, name: &str, id: [u8; 16], partitions: i32) -> Result<(), String>;
    /// [`ensure_mirror_topic`](Self::ensure_mirror_topic) for a start, which holds the source's
    /// topic configs (already filtered by `mirror.topic.properties.exclude`): a topic it creates
    /// is created with `configs` applied as
    /// [`apply_topic_configs`](Self::apply_topic_configs) would apply them right after (nothing
    /// removed), so each partition's config is written once, not once with the destination's
    /// defaults and again with the source's. A topic that exists is left to
    /// `apply_topic_configs`. The default creates with the defaults and applies nothing.
    ///
    /// # Errors
    /// As `ensure_mirror_topic`.
    fn ensure_mirror_topic_with_configs(
        &self,
        name: &str,
        id: [u8; 16],
        partitions: i32,
        configs: &[(String, String)],
    ) -> Result<ConfigsAtCreation, String> {
        let _ = configs;
        self.ensure_mirror_topic(name, id, partitions)?;
        Ok(ConfigsAtCreation::NotApplied)
    }
    /// The local topic with topic id `id`, if any: how a restarted mirror finds the names of
    /// the partitions `__mirror_state` holds (its keys carry topic ids).
    fn topic_name_for_id(&self, id: [u8; 16]) -> Option<String>;
    /// Removes topic `name`, which [`ensure_mirror_topic`](Self::ensure_mirror_topic) has just
    /// created for a start that then failed (nothing was mirrored into it, nobody owns it): the
    /// failed start leaves no topic behind. The default makes it writable instead (an empty
    /// ordinary topic), for implementations that cannot delete.
    ///
    /// # Errors
    /// The topic cannot be removed.
    fn remove_mirror_topic(&self, name: &str) -> Result<(), String> {
        self.set_read_only(name, false)
    }
    /// Applies topic configs copied from the source (already filtered by
    /// `mirror.topic.properties.exclude`); keys the destination does not support are skipped.
    /// `removed` are keys copied before that the source no longer sets: they go back to the
    /// destination's defaults.
    ///
    /// # Errors
    /// A value the destination refuses (the keys it accepts are applied all the same).
    fn apply_topic_configs(
        &self,
        name: &str,
        configs: &[(String, String)],
        removed: &[String],
    ) -> Result<(), String>;
    /// The topic configs topic `name` holds as its own (its topic overrides), key and value —
    /// what a mirror copied from the source before. A restarted mirror compares their keys with
    /// the source's to reset the keys the source stopped setting while it was down; a start
    /// that fails puts back the ones it replaced. Default: none known.
    fn topic_overrides(&self, _name: &str) -> Vec<(String, String)> {
        Vec::new()
    }
    /// Makes the topic writable (after a stop) or read-only again.
    ///
    /// # Errors
    /// The topic's config cannot be stored.
    fn set_read_only(&self, name: &str, read_only: bool) -> Result<(), String>;
    /// The logs of `partitions` changed: mirrored batches were appended (and high watermarks
    /// moved), or the mirror truncated them (an unclean-election recovery, a restart at the
    /// source's log start, a failback's alignment). The destination's fetches waiting on these
    /// partitions (long polls) should look again, and only those: as Kafka's fetcher completes
    /// the delayed fetches of the partitions it changed. Called once per applied fetch answer
    /// that changed a log, with each partition once. The default does nothing.
    fn appended(&self, _partitions: &[TopicPartition]) {}
}

/// What [`DestinationTopics::ensure_mirror_topic_with_configs`] did with the source's configs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigsAtCreation {
    /// None applied (the topic existed, or the implementation creates with its defaults): the
    /// caller applies them with [`DestinationTopics::apply_topic_configs`].
    NotApplied,
    /// The topic was created with them all.
    Applied,
    /// The topic was created with those the destination accepts; it refused the others, as
    /// `apply_topic_configs`'s error says (this is that message).
    Refused(String),
}

/// One mirrored partition as an operator sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionStatus {
    /// Topic.
    pub topic: String,
    /// Partition.
    pub partition: i32,
    /// State.
    pub state: S,
    /// State epoch.
    pub state_epoch: i32,
    /// The source's high watermark at the last fetch (−1 before one).
    pub source_high_watermark: Offset,
    /// The destination's log end.
    pub log_end_offset: Offset,
    /// `source_high_watermark − log_end_offset` (0 when unknown or caught up).
    pub lag: i64,
    /// Last mirror epoch recorded at stop (−1 none).
    pub last_mirror_epoch: LeaderEpoch,
    /// Where the last mirror epoch ends in the local log (−1 none).
    pub last_mirror_offset: Offset,
    /// Why it is FAILED.
    pub failure: Option<String>,
    /// Failed attempts so far (−1: a failure that is not retried automatically; 0: none).
    pub retry_attempt: i32,
    /// The topic id (the source's).
    pub topic_id: [u8; 16],
    /// The destination's leader epoch (−1 none).
    pub destination_leader_epoch: LeaderEpoch,
    /// The state a failure interrupted (the retry target), when one is recorded.
    pub previous_state: Option<S>,
    /// Transactions open in the destination log: `(producer id, epoch, first offset)` — what a
    /// stop now would abort.
    pub open_transactions: Vec<(ProducerId, ProducerEpoch, Offset)>,
}

/// Errors of mirror operations.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum MirrorError {
    /// The source failed.
    #[error(transparent)]
    Source(#[from] SourceError),
    /// A state move or its persistence failed.
    #[error(transparent)]
    State(#[from] StateError),
    /// The destination engine failed.
    #[error(transparent)]
    Engine(#[from] mirrorlog_engine::error::EngineError),
    /// A request the mirror cannot satisfy (unknown topic, not mirrored, …).
    #[error("{0}")]
    Invalid(String),
    /// Another mirror owns the topic ([`TopicClaims`]): TOPIC_ALREADY_IN_CLUSTER_MIRROR.
    #[error(
        "topic {topic} is already mirrored by cluster mirror {owner}; a topic belongs to one \
         mirror at a time (stop it there first)"
    )]
    HeldByAnotherMirror {
        /// The topic.
        topic: String,
        /// The mirror that owns it.
        owner: String,
    },
}

/// A partition's entry, locked by whoever acts on the partition (fetcher or operator).
type EntryRef = Arc<Mutex<Entry>>;

/// A partition in a fetch: its entry, what was asked, and the state epoch when it was asked.
type InFlight = (TopicPartition, EntryRef, PartitionFetch, i32);

/// Fetch rounds a pipelined fetcher may hand its applier ahead of it (beside the byte bound).
const PIPELINED_ANSWERS_MAX: usize = 16;

/// How long (mirror clock, ms) a fetcher of [`MirrorManager::run`] may have no partition before
/// it is stopped (Kafka shuts idle fetchers down at its next leadership change): a leader that
/// moves away and back within it keeps its fetcher.
pub const FETCHER_IDLE_MS: i64 = 1_000;

/// A wake-up for one of the loops of [`MirrorManager::run`], which otherwise waits
/// [`MirrorConfig::pass_interval_ms`] between passes. Wake-ups coalesce: any number of them
/// before the loop looks again make one early pass.
#[derive(Default)]
struct Wake {
    pending: Mutex<bool>,
    woken: parking_lot::Condvar,
}

impl Wake {
    fn notify(&self) {
        *self.pending.lock() = true;
        self.woken.notify_all();
    }

    /// Waits until notified (at once when a wake-up is pending) or `timeout` passes.
    fn wait(&self, timeout: Duration) {
        let mut pending = self.pending.lock();
        if !*pending {
            self.woken.wait_for(&mut pending, timeout);
        }
        *pending = false;
    }
}

/// Which partitions a fetch round is for: those whose hash picks fetcher `index`, led by
/// `source_node` (`None`: by any node, each asked in turn — the hand-driven rounds of tests).
#[derive(Debug, Clone, Copy)]
struct FetchScope {
    source_node: Option<i32>,
    index: usize,
}

/// The fetcher index of a partition among `threads` (Kafka's `getFetcherId`).
fn fetcher_index(tp: &TopicPartition, threads: usize) -> usize {
    (stable_hash(tp) % threads.max(1) as u64) as usize
}

/// A fetcher of the pool, with its applier.
struct RunningFetcher {
    stop: Arc<AtomicBool>,
    /// Since when (mirror clock, ms) it has had no partition; `None` while it has some.
    idle_since: Option<i64>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl RunningFetcher {
    fn finished(&self) -> bool {
        self.threads.iter().all(|t| t.is_finished())
    }

    fn join(self) {
        for t in self.threads {
            let _ = t.join();
        }
    }
}

/// The fetchers of [`MirrorManager::run`], by (source node, fetcher index).
#[derive(Default)]
struct FetcherPool {
    running: BTreeMap<(i32, usize), RunningFetcher>,
    /// Told to stop, not finished yet (a long poll or a slow node may hold one): a fetcher of
    /// the same (node, index) starts again only once it is, so at most one fetcher per pair
    /// holds answers.
    retiring: Vec<((i32, usize), RunningFetcher)>,
}

/// How long a partition whose fetch its leader answered with a retriable error waits before it
/// is fetched again (Kafka's `replica.fetch.backoff.ms` default): a broker answering errors at
/// once was asked again at every round, some 50 times a second.
const FETCH_ERROR_BACKOFF_MS: i64 = 1_000;

/// At most this many OffsetForLeaderEpoch questions about one partition in one fetch round
/// (each about an epoch below the one before).
const EPOCH_QUESTIONS_MAX: usize = 8;

/// What [`MirrorManager::check_divergence_before_fetch`] leaves a partition to this round.
enum BeforeFetch {
    /// No divergence (or none the source can tell): fetch it.
    Fetch,
    /// Not now: asked again at a later round (a divergence handled, an error, a moved state).
    Wait,
    /// Its source leader did not answer, or answered in another leader epoch: ask the source's
    /// metadata for the leader again.
    LeaderUnreachable,
}

/// The shortest pause between two leader refreshes a fetch asks for (Kafka's consumer backs its
/// metadata updates off by `retry.backoff.ms`, default 100).
const LEADER_REFRESH_MIN_INTERVAL_MS: i64 = 100;

/// One source leader's answer to a fetch, not applied yet.
struct Answer {
    /// The source node that answered.
    leader: i32,
    parts: Vec<InFlight>,
    response: FetchResponse,
}

/// Where a pipelined fetcher asks next for each partition: past the last answer it received,
/// which its applier may not have appended yet. Only used while the partition's state epoch is
/// the one it was made under.
#[derive(Default)]
struct FetchCursors {
    at: HashMap<TopicPartition, FetchCursor>,
    /// This fetcher's rounds so far: where each round's request starts among its partitions
    /// (its own count: with the mirror's, shared by every fetcher, a fetcher could see only
    /// every other value and start at the same partition every round).
    rounds: usize,
}

struct FetchCursor {
    offset: Offset,
    last_epoch: LeaderEpoch,
    state_epoch: i32,
}

/// What a pipelined fetcher thread shares with its applier.
#[derive(Default)]
struct Pipeline {
    /// Partitions whose answer the applier skipped or did not apply as the fetcher guessed:
    /// their cursors go, and the next fetch asks from the log end.
    resync: Mutex<Vec<TopicPartition>>,
    applied: Mutex<Applied>,
    applied_changed: parking_lot::Condvar,
}

#[derive(Default)]
struct Applied {
    /// Answers (one per fetch round) applied so far; `u64::MAX` once the applier is gone.
    rounds: u64,
    /// Record bytes handed to the applier and not applied yet.
    outstanding_bytes: usize,
}

impl Pipeline {
    fn handed(&self, bytes: usize) {
        self.applied.lock().outstanding_bytes += bytes;
    }

    fn applied_one(&self, bytes: usize) {
        let mut a = self.applied.lock();
        a.rounds = a.rounds.saturating_add(1);
        a.outstanding_bytes = a.outstanding_bytes.saturating_sub(bytes);
        drop(a);
        self.applied_changed.notify_all();
    }

    /// Waits until `handed` rounds of answers are applied (or the mirror stops).
    fn wait_applied(&self, handed: u64, stop: &AtomicBool) {
        let mut a = self.applied.lock();
        while a.rounds < handed && !stop.load(Ordering::Relaxed) {
            self.applied_changed
                .wait_for(&mut a, Duration::from_millis(100));
        }
    }

    /// What `max_bytes` leaves for the next request beside the answers not applied yet, once it
    /// is at least half of `max_bytes` (waiting for the applier until then; all of it once the
    /// mirror stops or the applier is gone).
    fn wait_budget(&self, max_bytes: usize, stop: &AtomicBool) -> usize {
        let mut a = self.applied.lock();
        loop {
            let budget = max_bytes.saturating_sub(a.outstanding_bytes);
            if budget >= max_bytes / 2 || a.rounds == u64::MAX || stop.load(Ordering::Relaxed) {
                return budget.max(1);
            }
            self.applied_changed
                .wait_for(&mut a, Duration::from_millis(100));
        }
    }
}

/// A pipelined fetcher's own state, for driving one a step at a time
/// ([`MirrorManager::fetch_ahead`], [`MirrorManager::apply_ahead`]); the fetcher threads of
/// [`MirrorManager::run`] do the same in a loop, on two threads.
pub struct PipelinedFetcher {
    scope: FetchScope,
    cursors: FetchCursors,
    shared: Arc<Pipeline>,
}

impl fmt::Debug for PipelinedFetcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PipelinedFetcher")
            .field("scope", &self.scope)
            .field("cursors", &self.cursors.at.len())
            .finish()
    }
}

/// Answers fetched by a [`PipelinedFetcher`], not applied yet.
pub struct FetchedAhead(Vec<Answer>);

impl FetchedAhead {
    /// Record bytes in these answers.
    pub fn record_bytes(&self) -> usize {
        self.0
            .iter()
            .flat_map(|a| &a.response.partitions)
            .map(|d| d.records.len())
            .sum()
    }
}

impl fmt::Debug for FetchedAhead {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FetchedAhead")
            .field("answers", &self.0.len())
            .field("record_bytes", &self.record_bytes())
            .finish()
    }
}

/// Marks every answer applied when dropped: the applier is gone, nothing is left to wait for.
struct AppliedAll<'a>(&'a Pipeline);

impl Drop for AppliedAll<'_> {
    fn drop(&mut self) {
        *self.0.applied.lock() = Applied {
            rounds: u64::MAX,
            outstanding_bytes: 0,
        };
        self.0.applied_changed.notify_all();
    }
}

#[derive(Clone)]
struct Entry {
    state: PartitionMirrorState,
    source_leader: i32,
    /// The source leader epoch heard of: the one the source's metadata named last, or a newer
    /// one read in fetched records (a source that does not fence fetches by epoch).
    source_epoch: LeaderEpoch,
    /// The leader epoch the source's metadata named for `source_leader` (−1: none named), sent
    /// as each fetch's `current_leader_epoch` (KIP-320), as Kafka's fetchers send the epoch of
    /// the leader their metadata names, never one read in records.
    leader_epoch: LeaderEpoch,
    source_hw: Offset,
    /// Not fetched before this time (mirror clock, ms): its last answer was an error from the
    /// leader it still has.
    fetch_backoff_until: i64,
    /// Kafka's `Truncating` fetch state: set when the partition enters MIRRORING, when its
    /// source leader changes, and when a fetch brings records of a source epoch not heard of;
    /// until a source whose fetches cannot report a divergence (Fetch below v12) has been asked
    /// where the partition's latest epoch ends there, it is not fetched
    /// ([`MirrorManager::check_divergence_before_fetch`]).
    truncating: bool,
}

impl Entry {
    /// Still MIRRORING at `state_epoch`: no stop, pause or failure since it was read.
    fn mirroring_at(&self, state_epoch: i32) -> bool {
        self.state.state == S::Mirroring && self.state.state_epoch == state_epoch
    }

    /// Still MIRRORING at `state_epoch`, with a source leader to fetch from.
    fn fetchable_at(&self, state_epoch: i32) -> bool {
        self.mirroring_at(state_epoch) && self.source_leader >= 0
    }
}

/// A mirrored topic.
#[derive(Debug, Clone)]
struct TopicInfo {
    id: [u8; 16],
    partitions: i32,
    missing_syncs: u32,
    /// The source configs last applied (config sync skips the write when they did not change).
    synced_configs: Option<Vec<(String, String)>>,
}

/// Whether two stored states of a partition are the same but for the state epoch and the time
/// (a start interrupted before moving it, or one put back already).
fn same_state(a: &PartitionMirrorState, b: &PartitionMirrorState) -> bool {
    a.state == b.state
        && a.last_mirror_epoch == b.last_mirror_epoch
        && a.destination_leader_epoch == b.destination_leader_epoch
        && a.failure == b.failure
}

/// Whether a start moves a partition stored in `state` to LOG_ALIGNMENT (one running already
/// is left as it is), and so whether putting back an interrupted start rewrites it.
fn a_start_moves(state: S) -> bool {
    !matches!(
        state,
        S::Mirroring | S::LogAlignment | S::Paused | S::Pausing
    )
}

/// What a start changed of one partition, for a start that fails later to put back.
struct StartedPartition {
    key: TopicPartition,
    /// The stored state before the start (`None`: no record).
    stored_before: Option<PartitionMirrorState>,
    /// The entry before the start (`None`: the start added it).
    entry_before: Option<Entry>,
    /// The state the start wrote (`None`: it wrote none, and took the stored one).
    written: Option<PartitionMirrorState>,
    /// The state the start left the entry in.
    now: PartitionMirrorState,
}

/// What a start of one topic changed, for a start that fails to put back.
#[derive(Default)]
struct StartUndo {
    /// What the mirror knew of the topic before (`None`: the destination topic was not
    /// touched; `Some(None)`: the mirror did not hold it).
    info_before: Option<Option<TopicInfo>>,
    /// The topic's own configs before the start copied the source's over them (`None`: the
    /// start copied nothing).
    configs_before: Option<Vec<(String, String)>>,
    /// The partitions the start moved, in order.
    partitions: Vec<StartedPartition>,
}

/// Marks a start of a topic in progress ([`MirrorManager::drive`] leaves the topic alone) for
/// as long as it lives.
struct StartInProgress<'a>(&'a Mutex<Option<String>>);

impl<'a> StartInProgress<'a> {
    fn new(slot: &'a Mutex<Option<String>>, topic: &str) -> Self {
        *slot.lock() = Some(topic.to_string());
        StartInProgress(slot)
    }
}

impl Drop for StartInProgress<'_> {
    fn drop(&mut self) {
        *self.0.lock() = None;
    }
}

/// The compiled `mirror.topics.include/exclude` and `mirror.topic.properties.exclude`.
#[derive(Debug, Clone)]
struct Filters {
    include: Vec<String>,
    exclude: Vec<String>,
    include_re: Vec<regex::Regex>,
    exclude_re: Vec<regex::Regex>,
    properties_exclude_re: Vec<regex::Regex>,
    groups_include_re: Vec<regex::Regex>,
    groups_exclude_re: Vec<regex::Regex>,
}

impl Filters {
    fn new(c: &MirrorConfig) -> Result<Filters, String> {
        Ok(Filters {
            include: c.topics_include.clone(),
            exclude: c.topics_exclude.clone(),
            include_re: compile_patterns("mirror.topics.include", &c.topics_include)?,
            exclude_re: compile_patterns("mirror.topics.exclude", &c.topics_exclude)?,
            properties_exclude_re: compile_patterns(
                "mirror.topic.properties.exclude",
                &c.topic_properties_exclude,
            )?,
            groups_include_re: compile_patterns("mirror.groups.include", &c.groups_include)?,
            groups_exclude_re: compile_patterns("mirror.groups.exclude", &c.groups_exclude)?,
        })
    }
}

/// One mirror. See the module docs.
pub struct MirrorManager {
    config: MirrorConfig,
    source: Arc<dyn SourceCluster>,
    logs: Arc<LogManager>,
    topics_api: Arc<dyn DestinationTopics>,
    store: Arc<MirrorStateStore>,
    clock: Arc<dyn Clock>,
    source_cluster_id: Mutex<Option<String>>,
    filters: Mutex<Filters>,
    /// Serialises starts (operators', discovery's), partition growth and stops, so a stop sees
    /// every partition a start or the sync adds. Taken before `claim_lock`.
    starting: Mutex<()>,
    /// Which mirror owns each destination topic, shared by the broker's mirrors (see
    /// [`crate::claims`]).
    claims: Arc<TopicClaims>,
    /// Serialises taking a claim and starting the topic's partitions with checking that a
    /// topic's partitions are all STOPPED and releasing its claim, so a claim is never dropped
    /// under a start of this mirror. Taken after `starting`, before any partition's lock.
    claim_lock: Mutex<()>,
    /// Set by [`MirrorManager::close_to_new_topics`] (DeleteClusterMirror): no topic starts.
    closed_to_new_topics: AtomicBool,
    /// The topic a start is working through (set and cleared under `starting`): `drive`
    /// leaves its partitions alone until the start has moved them all, so no LOG_ALIGNMENT
    /// truncation runs before the start is complete, and a start failing part-way can put back
    /// every partition it moved. A leaf lock.
    starting_topic: Mutex<Option<String>>,
    /// When a fetch last had the source's leaders asked (mirror clock, ms), and the topics
    /// whose leaders were asked for since, not yet asked (too soon after the last time, or the
    /// source did not answer): asked with the next refresh. A leaf lock.
    leaders_refreshed_at: Mutex<(i64, BTreeSet<String>)>,
    /// Hand-driven fetch rounds so far ([`fetch_round`](Self::fetch_round)): where each
    /// round's requests start among their partitions (a pipelined fetcher counts its own).
    fetch_rotation: AtomicUsize,
    group_sink: Mutex<Option<Arc<dyn GroupOffsetsSink>>>,
    last_group_sync: Mutex<Option<GroupSyncReport>>,
    topics: Mutex<BTreeMap<String, TopicInfo>>,
    /// The topics an operator paused (KIP-1279 §3.3: PAUSED is a topic's desired state) and
    /// has not resumed or stopped since: a partition of one that finishes LOG_ALIGNMENT (it
    /// was aligning when the pause came, LOG_ALIGNMENT → PAUSING not being a transition, or
    /// the source added it meanwhile) is paused at once. Kept by the partitions' states: a
    /// restore takes back the topics that hold a PAUSED or PAUSING partition (a pause is
    /// refused while no partition of the topic can pause). A leaf lock (taken under a
    /// partition's).
    paused_topics: Mutex<BTreeSet<String>>,
    partitions: Mutex<BTreeMap<TopicPartition, EntryRef>>,
    stop: AtomicBool,
    /// Wakes the sync thread to drive at once (a start moved partitions to LOG_ALIGNMENT).
    drive_wake: Wake,
    /// Wakes the fetcher pool loop at once (a partition reached MIRRORING).
    pool_wake: Wake,
    /// The sync thread and the fetcher pool loop.
    threads: Mutex<Vec<std::thread::JoinHandle<()>>>,
    fetchers: Mutex<FetcherPool>,
}

impl fmt::Debug for MirrorManager {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MirrorManager")
            .field("name", &self.config.name)
            .finish()
    }
}

fn tp(topic: &str, partition: i32) -> TopicPartition {
    TopicPartition {
        topic: topic.to_string(),
        partition,
    }
}

impl MirrorManager {
    /// A mirror of `source` into the destination `logs`. Partitions recorded in
    /// `__mirror_state` for this mirror come back in their states (their topics are resolved on
    /// the next [`sync`](Self::sync)).
    ///
    /// # Errors
    /// An invalid configuration.
    pub fn new(
        config: MirrorConfig,
        source: Arc<dyn SourceCluster>,
        logs: Arc<LogManager>,
        topics_api: Arc<dyn DestinationTopics>,
        store: Arc<MirrorStateStore>,
        clock: Arc<dyn Clock>,
    ) -> Result<Arc<MirrorManager>, MirrorError> {
        Self::new_with_claims(
            config,
            source,
            logs,
            topics_api,
            store,
            clock,
            Arc::new(TopicClaims::new()),
        )
    }

    /// [`new`](Self::new) sharing topic ownership with the other mirrors of `claims` (a
    /// broker's mirrors all share one table). The restored partitions' topics are claimed
    /// before this returns, so before [`run`](Self::run) fetches anything: a topic another
    /// mirror of `claims` already owns (state an older build wrote, when two mirrors could both
    /// take one topic) is not resumed here — its partitions that are not STOPPED are FAILED,
    /// not retryable, naming the owner.
    ///
    /// # Errors
    /// An invalid configuration; a storage error finishing the deletion of an earlier mirror
    /// of this name that a crash cut short ([`delete_states`](Self::delete_states)).
    pub fn new_with_claims(
        config: MirrorConfig,
        source: Arc<dyn SourceCluster>,
        logs: Arc<LogManager>,
        topics_api: Arc<dyn DestinationTopics>,
        store: Arc<MirrorStateStore>,
        clock: Arc<dyn Clock>,
        claims: Arc<TopicClaims>,
    ) -> Result<Arc<MirrorManager>, MirrorError> {
        config.validate().map_err(MirrorError::Invalid)?;
        let filters = Filters::new(&config).map_err(MirrorError::Invalid)?;
        let m = MirrorManager {
            config,
            source,
            logs,
            topics_api,
            store,
            clock,
            source_cluster_id: Mutex::new(None),
            filters: Mutex::new(filters),
            starting: Mutex::new(()),
            claims,
            claim_lock: Mutex::new(()),
            closed_to_new_topics: AtomicBool::new(false),
            starting_topic: Mutex::new(None),
            leaders_refreshed_at: Mutex::new((i64::MIN, BTreeSet::new())),
            fetch_rotation: AtomicUsize::new(0),
            group_sink: Mutex::new(None),
            last_group_sync: Mutex::new(None),
            topics: Mutex::new(BTreeMap::new()),
            paused_topics: Mutex::new(BTreeSet::new()),
            partitions: Mutex::new(BTreeMap::new()),
            stop: AtomicBool::new(false),
            drive_wake: Wake::default(),
            pool_wake: Wake::default(),
            threads: Mutex::new(vec![]),
            fetchers: Mutex::new(FetcherPool::default()),
        };
        // A mirror of this name whose deletion a crash cut short: its records are not this
        // mirror's to restore (a start intent of it put back would change a topic it no
        // longer held).
        if m.store.mirror_deletion_pending(&m.config.name) {
            tracing::warn!(mirror = %m.config.name, "finishing the deletion of an earlier mirror of this name, which a crash cut short");
            m.finish_deletion()?;
        }
        m.restore();
        Ok(Arc::new(m))
    }

    /// Brings back the partitions `__mirror_state` holds for this mirror, in their stored
    /// states: a MIRRORING partition fetches again from its local log end (nothing is copied
    /// twice), a PAUSED one stays paused, a STOPPED one stays writable. A partition's topic name
    /// comes from the local topic with the key's topic id; source leaders come with the first
    /// [`sync`](Self::sync).
    ///
    /// A partition of such a topic whose state lives in a `__mirror_state` partition that is not
    /// loaded (its data directory was offline at start, [`MirrorStateStore::unavailable`]) cannot
    /// be restored faithfully: it comes back FAILED, not retryable, naming the directory, held
    /// in memory only (nothing is written over the state the offline partition holds); it is
    /// never fetched, and operator actions on its topic are refused with the storage error
    /// ([`MirrorError::Engine`]) until a restart with the directory repaired restores it.
    ///
    /// First, a start a crash interrupted (its start intent is still stored) is put back
    /// ([`roll_back_start`](Self::roll_back_start)), before any partition of it is restored, so
    /// nothing of it is aligned.
    fn restore(&self) {
        let mut restored = 0usize;
        let mut mine = vec![];
        let mut held: HashMap<StateKey, String> = HashMap::new();
        for intent in self.store.start_intents(&self.config.name) {
            held.extend(self.roll_back_start(&intent));
        }
        for st in self.store.all() {
            if st.mirror != self.config.name {
                continue;
            }
            let Some(topic) = self.topics_api.topic_name_for_id(st.topic_id) else {
                tracing::warn!(mirror = %self.config.name, partition = st.partition,
                    "a __mirror_state record names a topic id with no local topic; skipped");
                continue;
            };
            mine.push((topic, st));
        }
        mine.extend(self.unavailable_states(&mine));
        // Claimed before anything touches a log: a topic with a partition not STOPPED is this
        // mirror's unless another mirror restored or started it first. Then it is that mirror's
        // alone, and this one's partitions of it fail for good (an older build let two mirrors
        // take one topic; only one may resume writing it).
        let mut lost: BTreeMap<String, String> = BTreeMap::new();
        for (topic, st) in &mine {
            if st.state == S::Stopped || lost.contains_key(topic) {
                continue;
            }
            if let Err(owner) = self.claims.claim(topic, &self.config.name) {
                lost.insert(topic.clone(), owner);
            }
        }
        for (topic, st) in mine {
            if let Some(owner) = lost.get(&topic) {
                let st = self.fail_restored_unowned(&topic, owner, st);
                self.restored_entry(&topic, st);
                restored += 1;
                continue;
            }
            // Its start was interrupted and could not be put back, or whether its start
            // completed is unknown (the intent's `__mirror_state` partition is not loaded): not
            // aligned, FAILED in memory only.
            let unknown_start = || {
                let key = StartIntent::key_of(&self.config.name, st.topic_id);
                self.store.unavailable(&key).map(|e| {
                    format!(
                        "whether the last start of topic {topic} completed is unknown (its \
                         start intent is unavailable: {e}), so this partition is not aligned; \
                         repair the data directory and restart"
                    )
                })
            };
            let reason = match held.remove(&st.key()) {
                Some(reason) => Some(reason),
                None if st.state == S::LogAlignment => unknown_start(),
                None => None,
            };
            if let Some(reason) = reason {
                let st = self.failed_in_memory(&topic, st, &reason);
                self.restored_entry(&topic, st);
                restored += 1;
                continue;
            }
            // The leader epoch the destination partition was bumped to lives in memory in the
            // engine; raise it again (DLE ≥ SLE survives a restart).
            if let Some(dest) = self.logs.get(&tp(&topic, st.partition)) {
                dest.write().raise_leader_epoch(st.destination_leader_epoch);
            }
            // A transient state a crash interrupted has no step that finishes it after a restart
            // (nothing fetches, bumps or pauses from it): finish it here. An epoch bump's epoch
            // was persisted with EPOCH_FENCING and is raised above; an unfinished ULE truncation
            // is found again by the next fetch; a pause completes.
            let mut st = st;
            let finish = match st.state {
                S::EpochFencing | S::UleRecovery => Some(S::Mirroring),
                S::Pausing => Some(S::Paused),
                _ => None,
            };
            if let Some(target) = finish {
                let epoch = st.state_epoch;
                let mut next = st.clone();
                match next
                    .transition(target, epoch, self.now())
                    .map_err(MirrorError::from)
                    .and_then(|()| {
                        self.store
                            .put_if_epoch(&next, epoch)
                            .map_err(MirrorError::from)
                    }) {
                    Ok(()) => st = next,
                    Err(e) => {
                        tracing::warn!(mirror = %self.config.name, partition = st.partition, "finishing the restored {:?} state failed: {e}", st.state)
                    }
                }
            }
            self.restored_entry(&topic, st);
            restored += 1;
        }
        if restored > 0 {
            tracing::info!(mirror = %self.config.name, partitions = restored, "restored mirror partitions from {}", crate::state::MIRROR_STATE_TOPIC);
        }
    }

    /// For each topic of `restored`, its local partitions with no restored state whose state
    /// would live in a `__mirror_state` partition that is not loaded: a FAILED state (in memory
    /// only) naming the offline directory.
    fn unavailable_states(
        &self,
        restored: &[(String, PartitionMirrorState)],
    ) -> Vec<(String, PartitionMirrorState)> {
        let mut topics: BTreeMap<&str, ([u8; 16], Vec<i32>)> = BTreeMap::new();
        for (topic, st) in restored {
            let e = topics.entry(topic).or_insert((st.topic_id, vec![]));
            e.1.push(st.partition);
        }
        let mut out = vec![];
        for (topic, (id, known)) in topics {
            // Every local partition, those of offline data dirs included.
            for p in 0.. {
                if matches!(self.logs.lookup(&tp(topic, p)), Ok(None)) {
                    break;
                }
                if known.contains(&p) {
                    continue;
                }
                let st = PartitionMirrorState::new(&self.config.name, id, p);
                let Some(offline) = self.store.unavailable(&st.key()) else {
                    continue;
                };
                let reason = format!(
                    "the state of this mirror partition is unavailable, so it is not restored \
                     (the mirror neither fetches nor appends to it, nor writes its state): \
                     {offline}; repair the data directory and restart"
                );
                out.push((topic.to_string(), self.failed_in_memory(topic, st, &reason)));
            }
        }
        out
    }

    /// `st` moved to FAILED, not retryable, in memory only (nothing is written): a restored
    /// partition the mirror must neither align nor fetch.
    fn failed_in_memory(
        &self,
        topic: &str,
        mut st: PartitionMirrorState,
        reason: &str,
    ) -> PartitionMirrorState {
        let epoch = st.state_epoch;
        if let Err(e) = st.fail(reason, false, epoch, self.now(), &self.config.retry) {
            tracing::warn!(mirror = %self.config.name, topic, partition = st.partition, "{e}");
        }
        tracing::error!(mirror = %self.config.name, topic, partition = st.partition, "mirror partition FAILED: {reason}");
        st
    }

    /// Puts back a start a crash interrupted, as `intent` recorded the topic before it: each
    /// partition's stored state as it was (rewritten with a new state epoch, or deleted when
    /// there was none), then, when no partition of the topic is left running here (all
    /// STOPPED, or none held), the topic's own configs and its writability, or a topic the
    /// start created is removed — what a failed start does
    /// ([`undo_started_partitions`](Self::undo_started_partitions),
    /// [`abandon_start`](Self::abandon_start)); then the intent is deleted. Nothing of the
    /// topic was aligned: `drive` leaves a topic alone while a start moves it, and runs after
    /// this. Returns the partitions whose state could not be put back (the start's stays
    /// stored), with why, to hold FAILED in memory; the intent then stays for the next restart
    /// (as it does when a topic change fails). While a state of the topic's partitions is
    /// unavailable (its data directory offline), nothing is put back and every partition is
    /// returned: an unloaded state reads as none, though it may be the start's.
    fn roll_back_start(&self, intent: &StartIntent) -> Vec<(StateKey, String)> {
        let topic = intent.topic.as_str();
        let key = |p: i32| PartitionMirrorState::new(&self.config.name, intent.topic_id, p).key();
        // A state that is not loaded reads as absent, though it may be the start's
        // LOG_ALIGNMENT: put back nothing (the topic neither) until every state is known, or
        // the restart with the directory repaired would align a partition of a topic this one
        // made writable again, its intent gone.
        if let Some(e) =
            (intent.partitions.iter()).find_map(|(p, _)| self.store.unavailable(&key(*p)))
        {
            let reason = format!(
                "a start of topic {topic} was interrupted (a crash), and it cannot be put back \
                 while a state of its partitions is unavailable ({e}): this partition is held \
                 here neither aligned nor fetched; repair the data directory and restart"
            );
            tracing::warn!(mirror = %self.config.name, topic, "a start of the topic was interrupted; not put back yet: {e}");
            return (intent.partitions.iter())
                .map(|(p, _)| (key(*p), reason.clone()))
                .collect();
        }
        let mut held = vec![];
        for (p, before) in &intent.partitions {
            // Running before the start, so the start left it alone (and it may have moved on
            // since, under an intent an earlier start left): nothing to put back.
            if before.as_ref().is_some_and(|b| !a_start_moves(b.state)) {
                continue;
            }
            let key = key(*p);
            let now = self.store.get(&key);
            let put_back = match (before, &now) {
                (None, None) => Ok(()),
                (None, Some(_)) => self.store.delete(&key).map(drop),
                (Some(b), Some(n)) if same_state(b, n) => Ok(()),
                (Some(b), now) => {
                    let mut back = b.clone();
                    let epoch = now.as_ref().map_or(-1, |n| n.state_epoch);
                    if let Some(n) = now {
                        back.state_epoch = n.state_epoch.checked_add(1).expect("state epoch");
                        back.updated_ms = self.now();
                    }
                    self.store.put_if_epoch(&back, epoch)
                }
            };
            if let Err(e) = put_back {
                let reason = format!(
                    "a start of topic {topic} was interrupted (a crash), and putting this \
                     partition back as it was before the start could not be recorded ({e}): \
                     it is held here neither aligned nor fetched; a restart tries again, or \
                     start the topic again (or recover it) to complete the start, or stop it"
                );
                held.push((key, reason));
            }
        }
        let mut undone = held.is_empty();
        let running = (self.store.all().into_iter()).any(|s| {
            s.mirror == self.config.name && s.topic_id == intent.topic_id && s.state != S::Stopped
        });
        if undone && !running {
            // Any partition of it: a removal a crash cut short leaves some. A topic of that
            // name with another id is not the one the start changed (the operator deleted that
            // one and created their own since): left alone.
            let here: Vec<_> = (intent.partitions.iter())
                .map(|(p, _)| self.logs.lookup(&tp(topic, *p)))
                .collect();
            let another = here.iter().any(|h| {
                matches!(h, Ok(Some(h)) if h.topic_id() != mirrorlog_index::TopicId(intent.topic_id))
            });
            let exists = !another && here.iter().any(|h| !matches!(h, Ok(None)));
            if exists && intent.topic_before != TopicBefore::Absent {
                let removed: Vec<String> = (self.topics_api.topic_overrides(topic).into_iter())
                    .map(|(k, _)| k)
                    .filter(|k| !intent.configs_before.iter().any(|(c, _)| c == k))
                    .collect();
                if let Err(e) =
                    (self.topics_api).apply_topic_configs(topic, &intent.configs_before, &removed)
                {
                    tracing::warn!(mirror = %self.config.name, topic, "putting back the topic configs of an interrupted start failed: {e}");
                    undone = false;
                }
            }
            let r = match intent.topic_before {
                TopicBefore::Absent if exists => self.topics_api.remove_mirror_topic(topic),
                TopicBefore::Writable if exists => self.topics_api.set_read_only(topic, false),
                _ => Ok(()),
            };
            if let Err(e) = r {
                tracing::warn!(mirror = %self.config.name, topic, "putting the topic of an interrupted start back as it was failed: {e}");
                undone = false;
            }
        }
        if undone && let Err(e) = self.store.delete_start_intent(&intent.key()) {
            tracing::warn!(mirror = %self.config.name, topic, "the start intent of an interrupted start, put back, could not be deleted (the next restart puts it back again): {e}");
        }
        tracing::warn!(mirror = %self.config.name, topic, complete = undone, "a start of the topic was interrupted: put back as it was before the start");
        held
    }

    /// [`topic_entries`](Self::topic_entries) for an operator action that writes their states:
    /// refused with the storage error when the state of one of them is unavailable
    /// ([`MirrorStateStore::unavailable`]), so that no state is written over one an offline
    /// `__mirror_state` partition holds and the topic is not changed half-way.
    fn topic_entries_to_change(
        &self,
        topic: &str,
    ) -> Result<Vec<(TopicPartition, EntryRef)>, MirrorError> {
        let entries = self.topic_entries(topic)?;
        match self.unavailable_state(&entries) {
            Some(e) => Err(MirrorError::Engine(e)),
            None => Ok(entries),
        }
    }

    /// Why the state of a partition of `topic` held by this mirror is unavailable, if one's is
    /// ([`MirrorStateStore::unavailable`]): operator actions on the topic are refused with it.
    pub fn topic_state_unavailable(&self, topic: &str) -> Option<EngineError> {
        self.unavailable_state(&self.topic_entries(topic).ok()?)
    }

    /// Why the states this mirror would keep for the topic with `topic_id` and `partitions`
    /// partitions may be unavailable, if one's is ([`MirrorStateStore::unavailable`]): for a
    /// read-only topic this mirror does not know it holds (every state of it in an offline
    /// `__mirror_state` partition at start), whether this mirror holds it is unknown.
    pub fn states_unavailable_for(
        &self,
        topic_id: [u8; 16],
        partitions: i32,
    ) -> Option<EngineError> {
        (0..partitions).find_map(|p| {
            let key = PartitionMirrorState::new(&self.config.name, topic_id, p).key();
            self.store.unavailable(&key)
        })
    }

    /// What describe shows of a read-only local topic (`topic_id`, `partitions` partitions) this
    /// mirror does not hold, when it may hold it without knowing
    /// ([`states_unavailable_for`](Self::states_unavailable_for): a state of it would live in a
    /// `__mirror_state` partition that is unavailable), so that the topic a start or a config
    /// change refuses with the storage error is listed rather than missing. A partition whose
    /// state is unavailable is FAILED, not retryable, naming the offline directory; one whose
    /// state would live in a loaded partition has none there, and is UNKNOWN. `None` for a
    /// topic this mirror holds, or one none of whose states is unavailable.
    pub fn unrestored_topic_status(
        &self,
        topic: &str,
        topic_id: [u8; 16],
        partitions: i32,
    ) -> Option<Vec<PartitionStatus>> {
        if self.topics.lock().contains_key(topic) {
            return None;
        }
        self.states_unavailable_for(topic_id, partitions)?;
        let statuses = (0..partitions)
            .map(|p| {
                let key = PartitionMirrorState::new(&self.config.name, topic_id, p).key();
                let (state, failure, retry_attempt) = match self.store.unavailable(&key) {
                    Some(e) => (
                        S::Failed,
                        Some(format!(
                            "the state of this partition is unavailable, so whether cluster \
                             mirror {} holds the read-only topic {topic} is unknown and it is \
                             not restored (neither fetched nor changed): {e}; repair the data \
                             directory and restart",
                            self.config.name
                        )),
                        -1,
                    ),
                    None => (S::Unknown, None, 0),
                };
                let leo = self
                    .logs
                    .get(&tp(topic, p))
                    .map_or(Offset(-1), |h| h.read().log_end_offset());
                PartitionStatus {
                    topic: topic.to_string(),
                    partition: p,
                    state,
                    state_epoch: -1,
                    source_high_watermark: Offset(-1),
                    log_end_offset: leo,
                    lag: 0,
                    last_mirror_epoch: LeaderEpoch::NONE,
                    last_mirror_offset: Offset(-1),
                    failure,
                    retry_attempt,
                    topic_id,
                    destination_leader_epoch: LeaderEpoch::NONE,
                    previous_state: None,
                    open_transactions: vec![],
                }
            })
            .collect();
        Some(statuses)
    }

    fn unavailable_state(&self, entries: &[(TopicPartition, EntryRef)]) -> Option<EngineError> {
        entries.iter().find_map(|(_, entry)| {
            let key = entry.lock().state.key();
            self.store.unavailable(&key)
        })
    }

    /// Adds a restored partition to the mirror's maps.
    fn restored_entry(&self, topic: &str, st: PartitionMirrorState) {
        if matches!(st.state, S::Paused | S::Pausing) || was_paused(&st) {
            self.paused_topics.lock().insert(topic.to_string());
        }
        {
            let mut topics = self.topics.lock();
            let info = topics.entry(topic.to_string()).or_insert(TopicInfo {
                id: st.topic_id,
                partitions: 0,
                missing_syncs: 0,
                synced_configs: None,
            });
            info.partitions = info.partitions.max(st.partition + 1);
        }
        self.partitions.lock().insert(
            tp(topic, st.partition),
            Arc::new(Mutex::new(Entry {
                state: st,
                source_leader: -1,
                source_epoch: LeaderEpoch::NONE,
                leader_epoch: LeaderEpoch::NONE,
                source_hw: Offset(-1),
                fetch_backoff_until: i64::MIN,
                truncating: true,
            })),
        );
    }

    /// A restored partition of a topic another mirror owns: FAILED, not retryable (persisted;
    /// kept in memory even if the write fails, so it is never fetched), unless STOPPED.
    fn fail_restored_unowned(
        &self,
        topic: &str,
        owner: &str,
        st: PartitionMirrorState,
    ) -> PartitionMirrorState {
        if st.state == S::Stopped {
            return st;
        }
        let reason = format!(
            "topic {topic} is also held by cluster mirror {owner}, which mirrors it (state \
             written by an older build that let two mirrors take one topic); a topic has one \
             writer, so this mirror does not resume it: stop it here, or delete this mirror"
        );
        let epoch = st.state_epoch;
        let mut next = st.clone();
        if let Err(e) = next
            .fail(&reason, false, epoch, self.now(), &self.config.retry)
            .map_err(MirrorError::from)
            .and_then(|()| {
                self.store
                    .put_if_epoch(&next, epoch)
                    .map_err(MirrorError::from)
            })
        {
            tracing::warn!(mirror = %self.config.name, topic, partition = st.partition, "recording FAILED for a partition another mirror owns failed: {e}");
        }
        tracing::warn!(mirror = %self.config.name, topic, partition = st.partition, %owner, "mirror partition FAILED: {reason}");
        next
    }

    /// The mirror's settings.
    pub fn config(&self) -> &MirrorConfig {
        &self.config
    }

    /// Whether topic config `key` of this mirror's topics is the source's: the config sync
    /// copies it (when the source sets it) or resets it to the destination's default (when the
    /// source does not), so a local value would not last. The keys matching
    /// `mirror.topic.properties.exclude` are the destination's own.
    pub fn copies_topic_config(&self, key: &str) -> bool {
        !self
            .filters
            .lock()
            .properties_exclude_re
            .iter()
            .any(|r| r.is_match(key))
    }

    /// The current `mirror.topics.include` and `mirror.topics.exclude` (they grow with
    /// [`add_patterns`](Self::add_patterns)).
    pub fn patterns(&self) -> (Vec<String>, Vec<String>) {
        let f = self.filters.lock();
        (f.include.clone(), f.exclude.clone())
    }

    /// Adds patterns to `mirror.topics.include` / `mirror.topics.exclude` (duplicates ignored);
    /// the next sync discovers what they match.
    ///
    /// # Errors
    /// An invalid regex (nothing changes).
    pub fn add_patterns(&self, include: &[String], exclude: &[String]) -> Result<(), MirrorError> {
        let (include, exclude) = self.patterns_with(include, exclude)?;
        self.set_patterns(include, exclude)
    }

    /// The include and exclude lists [`add_patterns`](Self::add_patterns) would leave, checked
    /// but not put in force (so a caller can record them durably first).
    ///
    /// # Errors
    /// An invalid regex.
    pub fn patterns_with(
        &self,
        include: &[String],
        exclude: &[String],
    ) -> Result<(Vec<String>, Vec<String>), MirrorError> {
        let (mut inc, mut exc) = self.patterns();
        for p in include {
            if !inc.contains(p) {
                inc.push(p.clone());
            }
        }
        for p in exclude {
            if !exc.contains(p) {
                exc.push(p.clone());
            }
        }
        self.filters_for(inc.clone(), exc.clone())?;
        Ok((inc, exc))
    }

    /// Puts `include` and `exclude` in force as the mirror's whole pattern lists.
    ///
    /// # Errors
    /// An invalid regex (nothing changes).
    pub fn set_patterns(
        &self,
        include: Vec<String>,
        exclude: Vec<String>,
    ) -> Result<(), MirrorError> {
        let f = self.filters_for(include, exclude)?;
        *self.filters.lock() = f;
        Ok(())
    }

    fn filters_for(
        &self,
        include: Vec<String>,
        exclude: Vec<String>,
    ) -> Result<Filters, MirrorError> {
        let mut next = self.config.clone();
        next.topics_include = include;
        next.topics_exclude = exclude;
        Filters::new(&next).map_err(MirrorError::Invalid)
    }

    /// DeleteClusterMirror's check: when every partition of the mirror is STOPPED, no topic
    /// is started from now on (discovery, operators) until
    /// [`reopen_to_new_topics`](Self::reopen_to_new_topics); otherwise the topics not stopped,
    /// and nothing changes. Checked under the lock starts take, so no start slips in between.
    ///
    /// # Errors
    /// The topics with a partition not STOPPED.
    pub fn close_to_new_topics(&self) -> Result<(), Vec<String>> {
        let _serial = self.starting.lock();
        let active: Vec<String> = self
            .topic_names()
            .into_iter()
            .filter(|t| self.topic_states(t).iter().any(|s| *s != S::Stopped))
            .collect();
        if !active.is_empty() {
            return Err(active);
        }
        self.closed_to_new_topics.store(true, Ordering::SeqCst);
        Ok(())
    }

    /// Undoes [`close_to_new_topics`](Self::close_to_new_topics) (a delete that failed).
    pub fn reopen_to_new_topics(&self) {
        self.closed_to_new_topics.store(false, Ordering::SeqCst);
    }

    /// Whether `topic` matches `mirror.topics.exclude` (such a topic is never started).
    pub fn is_excluded(&self, topic: &str) -> bool {
        self.filters
            .lock()
            .exclude_re
            .iter()
            .any(|r| r.is_match(topic))
    }

    /// Whether discovery would start `topic`: an include pattern matches and no exclude one.
    pub fn is_included(&self, topic: &str) -> bool {
        let f = self.filters.lock();
        f.include_re.iter().any(|r| r.is_match(topic))
            && !f.exclude_re.iter().any(|r| r.is_match(topic))
    }

    /// The source cluster id, once a metadata answer gave it.
    pub fn source_cluster_id(&self) -> Option<String> {
        self.source_cluster_id.lock().clone()
    }

    /// The topics of this mirror (started, restored or discovered), sorted.
    pub fn topic_names(&self) -> Vec<String> {
        self.topics.lock().keys().cloned().collect()
    }

    /// The states of `topic`'s partitions (empty when the mirror does not hold the topic).
    pub fn topic_states(&self, topic: &str) -> Vec<S> {
        self.partitions
            .lock()
            .iter()
            .filter(|(k, _)| k.topic == topic)
            .map(|(_, e)| e.lock().state.state)
            .collect()
    }

    /// Source topic names (not internal), for the operator's patterns.
    ///
    /// # Errors
    /// The source is unreachable.
    pub fn source_topic_names(&self) -> Result<Vec<String>, MirrorError> {
        Ok(self.source_topics()?.into_iter().map(|(n, _)| n).collect())
    }

    /// Source topics (not internal) with their topic ids.
    ///
    /// # Errors
    /// The source is unreachable.
    pub fn source_topics(&self) -> Result<Vec<(String, [u8; 16])>, MirrorError> {
        let md = self.source.metadata(None)?;
        self.check_cluster_id(&md.cluster_id)?;
        Ok(md
            .topics
            .into_iter()
            .filter(|t| !t.internal && t.error == 0)
            .map(|t| (t.name, t.id))
            .collect())
    }

    /// Manual recover (`--recover`): every FAILED partition of `topic` retries now, whatever its
    /// backoff or attempt count, into the state its failure names (a failure while mirroring
    /// resumes fetching from the local log end; nothing is truncated). Returns how many
    /// partitions were FAILED.
    ///
    /// # Errors
    /// The state cannot be persisted.
    pub fn recover_topic(&self, topic: &str) -> Result<usize, MirrorError> {
        // Before the claim: a topic this mirror does not hold is an error, and must not stay
        // claimed by it (no other mirror could start it, and nothing here would release it).
        let entries = self.topic_entries_to_change(topic)?;
        // A retry writes the log (alignment, fetching, the stop sequence): the owner's alone.
        {
            let _claiming = self.claim_lock.lock();
            // The operator completes a start whose undo could not be recorded: a restart must not
            // put it back once its partitions are aligned. Under the claim lock, which a start
            // holds throughout, so a start running now keeps its own intent until it completes.
            self.forget_start_intent(topic)?;
            if let Err(owner) = self.claims.claim(topic, &self.config.name) {
                return Err(MirrorError::HeldByAnotherMirror {
                    topic: topic.to_string(),
                    owner,
                });
            }
        }
        let mut n = 0;
        let mut stopping = false;
        for (key, entry) in entries {
            let mut e = entry.lock();
            if e.state.state != S::Failed {
                continue;
            }
            let target = e.state.retry_target();
            let was_paused = was_paused(&e.state);
            let epoch = e.state.state_epoch;
            let mut next = e.state.clone();
            next.clear_failure();
            next.transition(target, epoch, self.now())?;
            self.store.put_if_epoch(&next, epoch)?;
            e.state = next;
            self.pause_again(&key, &mut e, was_paused);
            n += 1;
            if e.state.state == S::Stopping {
                stopping = true;
                self.finish_stop(&key, &mut e)?;
            } else {
                self.ensure_leader_epoch(&key, &mut e);
            }
        }
        if stopping {
            self.open_if_stopped(topic)?;
        }
        let _claiming = self.claim_lock.lock();
        self.release_if_stopped_locked(topic);
        Ok(n)
    }

    /// Deletes every `__mirror_state` record of this mirror (tombstones), after
    /// [`shutdown`](Self::shutdown): DeleteClusterMirror.
    ///
    /// The tombstones are many writes, so a deletion record goes first and is tombstoned last
    /// (`__mirror_state` FORMAT): a crash (or a failed write) part-way leaves it, and a mirror
    /// created under this name later finishes the deletion before it restores anything, so it
    /// never puts back a start intent of this one (which would remove or rewrite a topic this
    /// mirror no longer holds) nor restores its states.
    ///
    /// # Errors
    /// A record cannot be written.
    pub fn delete_states(&self) -> Result<(), MirrorError> {
        // The broker writes the record before it takes the mirror out of its list.
        if !self.store.mirror_deletion_pending(&self.config.name) {
            self.store.put_mirror_deletion(&self.config.name)?;
        }
        self.finish_deletion()?;
        self.partitions.lock().clear();
        self.topics.lock().clear();
        self.paused_topics.lock().clear();
        self.claims.release_all(&self.config.name);
        Ok(())
    }

    /// Tombstones every start intent, then every state of this mirror, then its deletion
    /// record ([`MirrorStateStore::finish_mirror_deletion`]: refused while a `__mirror_state`
    /// partition is not loaded, as DeleteClusterMirror is).
    fn finish_deletion(&self) -> Result<(), MirrorError> {
        self.store
            .finish_mirror_deletion(&self.config.name)
            .map_err(|e| match e {
                StateError::Engine(e) => MirrorError::Engine(e),
                e => MirrorError::State(e),
            })
    }

    /// The last mirror epoch of a STOPPED partition of this mirror, by source topic id, and
    /// where it ends locally: the answer to a failback lookup. `Err(true)`: the partition is
    /// held but not STOPPED; `Err(false)`: not held.
    pub fn last_mirror_epoch(
        &self,
        topic_id: [u8; 16],
        partition: i32,
    ) -> Result<(LeaderEpoch, Offset), bool> {
        let name = self
            .topics
            .lock()
            .iter()
            .find(|(_, t)| t.id == topic_id)
            .map(|(n, _)| n.clone())
            .ok_or(false)?;
        let entry = self
            .partitions
            .lock()
            .get(&tp(&name, partition))
            .cloned()
            .ok_or(false)?;
        let e = entry.lock();
        if e.state.state != S::Stopped {
            return Err(true);
        }
        let lme = e.state.last_mirror_epoch;
        Ok((lme, self.last_mirror_offset(&tp(&name, partition), lme)))
    }

    fn last_mirror_offset(&self, key: &TopicPartition, lme: LeaderEpoch) -> Offset {
        if lme == LeaderEpoch::NONE {
            return Offset(-1);
        }
        self.logs.get(key).map_or(Offset(-1), |h| {
            let log = h.read();
            log.epoch_cache()
                .end_offset_for(lme, log.log_end_offset())
                .1
        })
    }

    /// The destination partition a MIRRORING partition writes: only while it is still a
    /// read-only mirror partition. The mirror finds its partitions by name; a client that deleted
    /// the mirror topic and created an ordinary topic under that name (a new topic id, writable)
    /// must never get the source's records, truncations or epoch bumps.
    fn mirror_destination(&self, key: &TopicPartition) -> Option<Arc<PartitionHandle>> {
        self.logs.get(key).filter(|h| h.read().is_read_only())
    }

    /// The mirror's name.
    pub fn name(&self) -> &str {
        &self.config.name
    }

    fn now(&self) -> i64 {
        self.clock.now_ms()
    }

    /// Starts mirroring `topics`: creates each read-only destination topic with the source's
    /// partition count, and moves its partitions to LOG_ALIGNMENT (persisted); the next
    /// [`drive`](Self::drive) aligns and starts fetching.
    ///
    /// A start of a topic that fails leaves it as it was, as KIP-1279's controller applies a
    /// start in one metadata write: the partitions it moved go back to their states (none of
    /// them was aligned meanwhile), and when none of the topic is left running, its configs,
    /// writability (or absence) and claim are put back. A partition whose undo cannot be
    /// recorded is held FAILED, not retried, until the start is repeated (or recovered).
    ///
    /// A crash in the middle of a start is put back the same way by the next restore: each
    /// topic's start records a start intent in `__mirror_state` before it changes anything of
    /// the topic (state FORMAT) and deletes it once complete, and a restore that finds one puts
    /// the topic and its partitions back as the intent recorded them before anything is
    /// aligned, so a start takes effect whole or not at all.
    ///
    /// # Errors
    /// The source is unreachable, a topic is unknown on the source or internal, or the state
    /// cannot be persisted.
    pub fn start_topics(&self, topics: &[String]) -> Result<(), MirrorError> {
        self.start_topics_inner(topics, false)
    }

    /// [`start_topics`](Self::start_topics); with `only_new`, topics the mirror already holds
    /// are left alone (discovery). Starts are serialised, so an operator's start and the sync
    /// thread's discovery of the same topic never race for its first state write.
    fn start_topics_inner(&self, topics: &[String], only_new: bool) -> Result<(), MirrorError> {
        let _serial = self.starting.lock();
        if self.closed_to_new_topics.load(Ordering::SeqCst) {
            return Err(MirrorError::Invalid(format!(
                "cluster mirror {} is being deleted: it starts no topics",
                self.config.name
            )));
        }
        let topics: Vec<String> = topics
            .iter()
            .filter(|t| !only_new || !self.topics.lock().contains_key(*t))
            .cloned()
            .collect();
        if topics.is_empty() {
            return Ok(());
        }
        let md = self.source.metadata(Some(&topics))?;
        self.check_cluster_id(&md.cluster_id)?;
        for t in &md.topics {
            if t.error != 0 {
                return Err(MirrorError::Invalid(format!(
                    "source topic {}: error {}",
                    t.name, t.error
                )));
            }
            if t.internal {
                return Err(MirrorError::Invalid(format!(
                    "{} is an internal topic and is never mirrored",
                    t.name
                )));
            }
            // Before anything of the topic changes: a partition whose stored state is unknown
            // (its `__mirror_state` partition not loaded) may be mirroring or failed over.
            for p in &t.partitions {
                let key = PartitionMirrorState::new(&self.config.name, t.id, p.partition).key();
                if let Some(e) = self.store.unavailable(&key) {
                    return Err(MirrorError::Engine(e));
                }
            }
            // Claimed before the destination topic is created or made read-only, and held
            // while its partitions start: one writer per topic (KIP-1279:
            // TOPIC_ALREADY_IN_CLUSTER_MIRROR unless the other mirror STOPPED it).
            let _claiming = self.claim_lock.lock();
            if let Err(owner) = self.claims.claim(&t.name, &self.config.name) {
                return Err(MirrorError::HeldByAnotherMirror {
                    topic: t.name.clone(),
                    owner,
                });
            }
            // How the topic was before this start: absent, writable (failed over), or already
            // read-only. A start that fails with nothing of the topic left running puts it back.
            let before = self
                .logs
                .get(&tp(&t.name, 0))
                .map(|h| h.read().is_read_only());
            // Recorded before anything of the topic changes, deleted once the start is complete
            // or undone: a crash in between is put back by the next start's `restore`.
            if let Err(err) = self.record_start_intent(t, before) {
                self.abandon_start(&t.name, before, StartUndo::default());
                return Err(err);
            }
            let intent = StartIntent::key_of(&self.config.name, t.id);
            let mut undo = StartUndo::default();
            let mut undone = true;
            let started = {
                let _in_progress = StartInProgress::new(&self.starting_topic, &t.name);
                let r = self.start_claimed_topic(t, &mut undo).and_then(|()| {
                    self.store
                        .delete_start_intent(&intent)
                        .map(drop)
                        .map_err(MirrorError::from)
                });
                if let Err(err) = &r {
                    let partitions = std::mem::take(&mut undo.partitions);
                    undone = self.undo_started_partitions(&t.name, partitions, err);
                }
                r
            };
            if let Err(err) = started {
                undone &= self.abandon_start(&t.name, before, undo);
                // Kept when something could not be put back: a restart puts it back.
                if undone && let Err(e) = self.store.delete_start_intent(&intent) {
                    tracing::warn!(mirror = %self.config.name, topic = %t.name, "the start intent of the undone start could not be deleted (a restart puts the topic back as it was before the start again): {e}");
                }
                return Err(err);
            }
            // Its partitions are in LOG_ALIGNMENT: aligned at once, not at the sync thread's
            // next pass.
            self.drive_wake.notify();
        }
        Ok(())
    }

    /// Records the start intent of `t` (`__mirror_state` FORMAT): the destination topic as it
    /// is (`before`, its own configs) and each partition's stored state. An intent left by an
    /// earlier start that was not complete (its deletion failed) keeps what it recorded: the
    /// topic and partitions before that start are what a crash puts back.
    fn record_start_intent(
        &self,
        t: &crate::source::SourceTopic,
        before: Option<bool>,
    ) -> Result<(), MirrorError> {
        let key = |p: i32| PartitionMirrorState::new(&self.config.name, t.id, p).key();
        let mut intent = StartIntent {
            mirror: self.config.name.clone(),
            topic_id: t.id,
            topic: t.name.clone(),
            topic_before: match before {
                None => TopicBefore::Absent,
                Some(false) => TopicBefore::Writable,
                Some(true) => TopicBefore::ReadOnly,
            },
            configs_before: match before {
                None => vec![],
                Some(_) => self.topics_api.topic_overrides(&t.name),
            },
            partitions: (t.partitions.iter())
                .map(|p| (p.partition, self.store.get(&key(p.partition))))
                .collect(),
        };
        if let Some(old) = self.store.start_intent(&self.config.name, t.id) {
            intent.topic_before = old.topic_before;
            intent.configs_before = old.configs_before;
            for (p, st) in &mut intent.partitions {
                if let Some((_, was)) = old.partitions.iter().find(|(q, _)| q == p) {
                    *st = was.clone();
                }
            }
        }
        self.store.put_start_intent(&intent)?;
        Ok(())
    }

    /// A start of `topic` failed after moving the partitions of `started`: each goes back to
    /// the state it had (its record rewritten as it was, with a new state epoch, or deleted
    /// when the start wrote the first one; its entry put back, or removed when the start added
    /// it). Nothing of these partitions was truncated: `drive` leaves a topic being started
    /// alone. A partition whose undo cannot be recorded keeps the LOG_ALIGNMENT the start
    /// wrote, so it is held FAILED, not retried automatically, with a reason that says the
    /// start failed and that a repeated start (or a recover) completes it; the topic then stays
    /// this mirror's and read-only. The caller holds `starting` and `claim_lock`, and `topic`
    /// is the start in progress.
    ///
    /// Returns whether every partition was put back.
    fn undo_started_partitions(
        &self,
        topic: &str,
        started: Vec<StartedPartition>,
        start_err: &MirrorError,
    ) -> bool {
        let mut all = true;
        for u in started.into_iter().rev() {
            let Some(entry) = self.partitions.lock().get(&u.key).cloned() else {
                continue;
            };
            let mut e = entry.lock();
            if e.state != u.now {
                // Moved since by another operator action: not the start's to undo.
                continue;
            }
            let now = self.now();
            let put_back = match (&u.written, &u.stored_before) {
                (None, _) => Ok(None),
                (Some(_), None) => self.store.delete(&u.now.key()).map(|_| None),
                (Some(w), Some(prev)) => {
                    let mut back = prev.clone();
                    back.state_epoch = w.state_epoch.checked_add(1).expect("state epoch overflow");
                    back.updated_ms = now;
                    self.store
                        .put_if_epoch(&back, w.state_epoch)
                        .map(|()| Some(back))
                }
            };
            match put_back {
                Ok(back) => {
                    match u.entry_before {
                        Some(mut before) => {
                            if let Some(back) = back {
                                before.state = back;
                            }
                            *e = before;
                        }
                        None => {
                            drop(e);
                            self.partitions.lock().remove(&u.key);
                        }
                    }
                    tracing::info!(mirror = %self.config.name, partition = %u.key, "the start failed: the partition is back in the state it had");
                }
                Err(undo_err) => {
                    let reason = format!(
                        "the start of topic {topic} failed ({start_err}), and putting this \
                         partition back as it was could not be recorded ({undo_err}): its stored \
                         state is the start's LOG_ALIGNMENT, so it is held here neither aligned \
                         nor fetched; start the topic again (or recover it) to complete the \
                         start, or stop it"
                    );
                    self.fail_unstarted(&u.key, &mut e, &reason);
                    all = false;
                }
            }
        }
        all
    }

    /// Moves a partition a failed start could not put back to FAILED, not retryable, persisted
    /// when possible and held in memory otherwise (so `drive` never aligns it on its own).
    fn fail_unstarted(&self, key: &TopicPartition, entry: &mut Entry, reason: &str) {
        let epoch = entry.state.state_epoch;
        let mut next = entry.state.clone();
        if next
            .fail(reason, false, epoch, self.now(), &self.config.retry)
            .is_err()
        {
            return;
        }
        if let Err(err) = self.store.put_if_epoch(&next, epoch) {
            let reason = format!(
                "{reason}; this FAILED state could not be persisted either ({err}), so it is \
                 held in memory only (a restart resumes the start)"
            );
            next = entry.state.clone();
            if next
                .fail(&reason, false, epoch, self.now(), &self.config.retry)
                .is_err()
            {
                return;
            }
        }
        tracing::error!(mirror = %self.config.name, partition = %key, "mirror partition FAILED: {}", next.failure.as_ref().map_or("", |f| f.reason.as_str()));
        entry.state = next;
    }

    /// A start of `topic` failed and [`undo_started_partitions`](Self::undo_started_partitions)
    /// put its partitions back (the caller holds `claim_lock`). When no partition of it is left
    /// running here (all STOPPED, or none held), it is left as it was before the start, as
    /// KIP-1279's controller applies a start all at once or not at all: the topic configs the
    /// start copied from the source are the topic's own again, a topic the start created is
    /// removed again ([`DestinationTopics::remove_mirror_topic`]), a failed-over topic it made
    /// read-only again is writable again; then the claim is released and the mirror forgets
    /// the topic unless it holds partitions of it (so discovery tries it again). Read-only with
    /// no owner, nothing would write it and clients could not produce to it. When a partition
    /// is left running (it was before the start, or its undo could not be recorded and it is
    /// FAILED), the mirror keeps the topic (claimed, read-only, with the source's configs).
    ///
    /// Returns whether the topic is as it was before the start (false: a change failed).
    fn abandon_start(&self, topic: &str, before: Option<bool>, undo: StartUndo) -> bool {
        let mut undone = true;
        if !self.topic_states(topic).iter().all(|s| *s == S::Stopped) {
            return undone;
        }
        // `info_before` is None when the destination topic was not touched (ensure failed).
        if let Some(info_before) = undo.info_before {
            // The topic's own configs back before it is writable again (a removed topic takes
            // its configs with it).
            if let (Some(_), Some(configs)) = (before, undo.configs_before) {
                let removed: Vec<String> = self
                    .topics_api
                    .topic_overrides(topic)
                    .into_iter()
                    .map(|(k, _)| k)
                    .filter(|k| !configs.iter().any(|(c, _)| c == k))
                    .collect();
                if let Err(err) = self
                    .topics_api
                    .apply_topic_configs(topic, &configs, &removed)
                {
                    tracing::warn!(mirror = %self.config.name, topic, "putting back the topic configs the failed start replaced failed: {err}");
                    undone = false;
                }
            }
            let undone_topic = match before {
                None => self.topics_api.remove_mirror_topic(topic),
                Some(false) => self.topics_api.set_read_only(topic, false),
                Some(true) => Ok(()),
            };
            if let Err(err) = undone_topic {
                tracing::warn!(mirror = %self.config.name, topic, "putting the topic back as it was before the failed start failed: {err}");
                undone = false;
            }
            let held = self.partitions.lock().keys().any(|k| k.topic == topic);
            let mut topics = self.topics.lock();
            match info_before {
                Some(info) => {
                    topics.insert(topic.to_string(), info);
                }
                None if !held => {
                    topics.remove(topic);
                }
                None => {}
            }
        }
        self.claims.release(topic, &self.config.name);
        undone
    }

    /// Creates (or takes back) `t`'s destination topic and starts its partitions; the caller
    /// holds `claim_lock` and `t`'s claim. `undo` collects what the start changed, for a
    /// failure to put back.
    fn start_claimed_topic(
        &self,
        t: &crate::source::SourceTopic,
        undo: &mut StartUndo,
    ) -> Result<(), MirrorError> {
        // Before the first fetch: a partition must never hold mirrored data under the
        // destination's defaults (a default `retention.ms` deletes old source data as it
        // lands; the periodic sync would only fix that a refresh interval later). A topic the
        // start creates is created with them: each partition's config written once.
        let configs = self.source_topic_configs(&t.name);
        let n = t.partitions.len() as i32;
        let at_creation = match &configs {
            Some(c) => self
                .topics_api
                .ensure_mirror_topic_with_configs(&t.name, t.id, n, c),
            None => (self.topics_api.ensure_mirror_topic(&t.name, t.id, n))
                .map(|()| ConfigsAtCreation::NotApplied),
        }
        .map_err(MirrorError::Invalid)?;
        undo.info_before = Some(self.topics.lock().get(&t.name).cloned());
        self.topics.lock().insert(
            t.name.clone(),
            TopicInfo {
                id: t.id,
                partitions: n,
                missing_syncs: 0,
                synced_configs: None,
            },
        );
        match (configs, at_creation) {
            (Some(configs), ConfigsAtCreation::Applied) => {
                if let Some(info) = self.topics.lock().get_mut(&t.name) {
                    info.synced_configs = Some(configs);
                }
            }
            // As a refused copy: logged, and tried again at the next sync.
            (Some(_), ConfigsAtCreation::Refused(e)) => {
                tracing::warn!(mirror = %self.config.name, topic = %t.name, "cannot apply source topic configs: {e}");
            }
            (configs, _) => {
                let configs_before = self.topics_api.topic_overrides(&t.name);
                if configs.is_some_and(|c| self.apply_source_configs(&t.name, c)) {
                    undo.configs_before = Some(configs_before);
                }
            }
        }
        for p in &t.partitions {
            if let Some(started) =
                self.start_partition(&t.name, t.id, p.partition, p.leader, p.leader_epoch)?
            {
                undo.partitions.push(started);
            }
        }
        Ok(())
    }

    /// Whether this mirror owns `topic` (only the owner writes its log).
    fn owns(&self, topic: &str) -> bool {
        self.claims.owns(topic, &self.config.name)
    }

    /// Releases this mirror's claim on `topic` when it holds no partition of it that is not
    /// STOPPED; the caller holds `claim_lock`.
    fn release_if_stopped_locked(&self, topic: &str) {
        if self.topic_states(topic).iter().all(|s| *s == S::Stopped) {
            self.claims.release(topic, &self.config.name);
        }
    }

    /// Moves one partition to LOG_ALIGNMENT (persisted) unless it is running already; returns
    /// what it changed (`None`: nothing).
    fn start_partition(
        &self,
        topic: &str,
        id: [u8; 16],
        partition: i32,
        leader: i32,
        epoch: LeaderEpoch,
    ) -> Result<Option<StartedPartition>, MirrorError> {
        let key = tp(topic, partition);
        // Already running (started by the sync thread while an operator's start of a big topic
        // was still working through its partitions, or started twice): nothing to do. Its state
        // may be past MIRRORING (EPOCH_FENCING, ULE_RECOVERY), from which LOG_ALIGNMENT is not a
        // transition, and its entry holds the fetch position. STOPPED and FAILED ones restart.
        // An existing entry stays locked from this check to its update in place, so the sync
        // thread's `drive` (which may retry a FAILED partition meanwhile) cannot move it in
        // between and be left holding an entry the map no longer has.
        let existing = self.partitions.lock().get(&key).cloned();
        let mut guard = existing.as_ref().map(|e| e.lock());
        if let Some(e) = &guard
            && !matches!(e.state.state, S::Stopped | S::Failed | S::Stopping)
        {
            return Ok(None);
        }
        let stored_before = self
            .store
            .get(&PartitionMirrorState::new(&self.config.name, id, partition).key());
        // The epoch the store holds for the key (−1: none), which fences this first write.
        let stored_epoch = stored_before.as_ref().map_or(-1, |s| s.state_epoch);
        let mut state = stored_before
            .clone()
            .unwrap_or_else(|| PartitionMirrorState::new(&self.config.name, id, partition));
        let mut written = None;
        if a_start_moves(state.state) {
            let e = state.state_epoch;
            state.transition(S::LogAlignment, e, self.now())?;
            self.store.put_if_epoch(&state, stored_epoch)?;
            written = Some(state.clone());
        }
        let fresh = Entry {
            state: state.clone(),
            source_leader: leader,
            source_epoch: epoch,
            leader_epoch: epoch,
            source_hw: Offset(-1),
            fetch_backoff_until: i64::MIN,
            truncating: true,
        };
        let entry_before = match guard.as_deref_mut() {
            Some(e) => Some(std::mem::replace(e, fresh)),
            None => {
                self.partitions
                    .lock()
                    .insert(key.clone(), Arc::new(Mutex::new(fresh)));
                None
            }
        };
        Ok(Some(StartedPartition {
            key,
            stored_before,
            entry_before,
            written,
            now: state,
        }))
    }

    fn check_cluster_id(&self, id: &str) -> Result<(), MirrorError> {
        let mut known = self.source_cluster_id.lock();
        match known.as_deref() {
            None => {
                *known = Some(id.to_string());
                Ok(())
            }
            Some(k) if k == id => Ok(()),
            Some(k) => Err(MirrorError::Invalid(format!(
                "the source cluster id changed from {k} to {id}"
            ))),
        }
    }

    /// Moves `entry` to `target` and persists it (fenced by the state epoch).
    fn move_to(&self, entry: &mut Entry, target: S) -> Result<(), MirrorError> {
        let e = entry.state.state_epoch;
        let mut next = entry.state.clone();
        next.transition(target, e, self.now())?;
        self.store.put_if_epoch(&next, e)?;
        entry.state = next;
        if target == S::Mirroring {
            entry.truncating = true;
        }
        Ok(())
    }

    /// Records a leader-epoch bump already applied to the destination log (the reactive and
    /// proactive bumps of the fetch path): EPOCH_FENCING, then MIRRORING with the new
    /// destination leader epoch, both persisted.
    fn record_epoch_bump(&self, key: &TopicPartition, entry: &mut Entry, new_epoch: LeaderEpoch) {
        // Set first, so whatever is persisted next (a failure included) carries it.
        entry.state.destination_leader_epoch = new_epoch;
        let r = self
            .move_to(entry, S::EpochFencing)
            .and_then(|_| self.move_to(entry, S::Mirroring));
        match r {
            Ok(()) => {
                tracing::info!(mirror = %self.config.name, partition = %key, epoch = new_epoch.get(), "bumped the destination leader epoch");
            }
            Err(err) => self.fail(
                key,
                entry,
                &format!("recording a leader-epoch bump failed: {}", ErrorChain(&err)),
                true,
            ),
        }
    }

    /// The periodic bump (KIP-1279 §7): a MIRRORING partition whose leader epoch the source's
    /// has come within [`LEADER_EPOCH_BUMP_THRESHOLD`](crate::partition::LEADER_EPOCH_BUMP_THRESHOLD)
    /// of goes through EPOCH_FENCING, where its epoch is raised to the source's + 10, back to
    /// MIRRORING.
    fn ensure_leader_epoch(&self, key: &TopicPartition, entry: &mut Entry) {
        if entry.state.state != S::Mirroring {
            return;
        }
        let Some(dest) = self.mirror_destination(key) else {
            return;
        };
        let local = dest.read().leader_epoch();
        let Some(target) = epoch_bump_target(local, entry.source_epoch) else {
            return;
        };
        let r = self.move_to(entry, S::EpochFencing).and_then(|_| {
            let new_epoch = dest.write().raise_leader_epoch(target);
            entry.state.destination_leader_epoch = new_epoch;
            self.move_to(entry, S::Mirroring)
        });
        match r {
            Ok(()) => {
                tracing::info!(mirror = %self.config.name, partition = %key, source_epoch = entry.source_epoch.get(), epoch = target.get(), "bumped the destination leader epoch above the source's");
            }
            Err(err) => self.fail(
                key,
                entry,
                &format!("bumping the leader epoch failed: {}", ErrorChain(&err)),
                true,
            ),
        }
    }

    /// Fails, not retryable, every partition of `topic` that is neither STOPPED nor FAILED.
    fn fail_topic(&self, topic: &str, reason: &str) {
        for (key, entry) in self
            .partitions
            .lock()
            .iter()
            .filter(|(k, _)| k.topic == topic)
        {
            let mut e = entry.lock();
            if !matches!(e.state.state, S::Stopped | S::Failed) {
                self.fail(key, &mut e, reason, false);
            }
        }
    }

    /// Moves `entry` to FAILED and persists it. When the state cannot be persisted because its
    /// `__mirror_state` partition is unavailable ([`MirrorStateStore::unavailable`]: its data
    /// directory went offline, often in the very failure being recorded), the partition is
    /// FAILED all the same, in memory only and not retryable, naming the directory — as a
    /// restore leaves such a partition: no retry could record its progress, and a partition
    /// left in its state would be driven, and refused, on every pass. When the write failed on
    /// a directory that stays online (a full disk: space may return at any moment), it is
    /// FAILED in memory and retried as any failure, at the stored state epoch, so that the
    /// retry's transition is recorded over the stored state once the write goes through (a
    /// restart meanwhile resumes from the stored state, as the retry would).
    fn fail(&self, key: &TopicPartition, entry: &mut Entry, reason: &str, retryable: bool) {
        let e = entry.state.state_epoch;
        let mut next = entry.state.clone();
        if next
            .fail(reason, retryable, e, self.now(), &self.config.retry)
            .is_err()
        {
            return;
        }
        let err = match self.store.put_if_epoch(&next, e) {
            Ok(()) => {
                tracing::warn!(mirror = %self.config.name, partition = %key, retryable, "mirror partition FAILED: {reason}");
                entry.state = next;
                return;
            }
            Err(err) => err,
        };
        let Some(offline) = self.store.unavailable(&entry.state.key()) else {
            if matches!(err, StateError::Engine(_)) {
                self.fail_unrecorded(key, entry, reason, retryable, &err);
            }
            return;
        };
        let reason = format!(
            "{reason}; this FAILED state could not be persisted, so it is held in memory only \
             and not retried (the mirror neither fetches nor appends to the partition, nor \
             writes its state): {offline}; repair the data directory and restart"
        );
        let mut next = entry.state.clone();
        if next
            .fail(&reason, false, e, self.now(), &self.config.retry)
            .is_ok()
        {
            tracing::error!(mirror = %self.config.name, partition = %key, "mirror partition FAILED: {reason}");
            entry.state = next;
        }
    }

    /// [`fail`](Self::fail) when writing the FAILED state failed with `err` on a data directory
    /// that stays online: FAILED in memory, retried as `retryable` says, the state epoch left
    /// at the stored one (the next transition written is checked against what is stored).
    fn fail_unrecorded(
        &self,
        key: &TopicPartition,
        entry: &mut Entry,
        reason: &str,
        retryable: bool,
        err: &StateError,
    ) {
        let e = entry.state.state_epoch;
        let reason = format!(
            "{reason}; this FAILED state could not be persisted ({})",
            ErrorChain(err)
        );
        let mut next = entry.state.clone();
        if next
            .fail(&reason, retryable, e, self.now(), &self.config.retry)
            .is_ok()
        {
            next.state_epoch = e;
            tracing::warn!(mirror = %self.config.name, partition = %key, retryable, "mirror partition FAILED (in memory): {reason}");
            entry.state = next;
        }
    }

    /// Every partition's entry, as the map holds them now (no entry locked).
    fn all_entries(&self) -> Vec<(TopicPartition, EntryRef)> {
        self.partitions
            .lock()
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }

    /// One pass of the state machine for partitions not being fetched: LOG_ALIGNMENT truncates
    /// and moves to MIRRORING; FAILED partitions whose backoff elapsed are retried.
    pub fn drive(&self) {
        let entries = self.all_entries();
        let mut stopped_topics = BTreeSet::new();
        let mut owned: HashMap<String, bool> = HashMap::new();
        let mut reached_mirroring = false;
        for (key, entry) in entries {
            let mut e = entry.lock();
            if matches!(e.state.state, S::Stopped | S::Mirroring | S::Paused) {
                continue;
            }
            // Every step below writes the log (a retry, the stop sequence, the alignment's
            // truncation): only for a topic this mirror owns. A partition of a topic another
            // mirror owns (restored from an older build's state) waits, FAILED, for an
            // operator's stop, which changes its state only.
            let mine = *owned
                .entry(key.topic.clone())
                .or_insert_with(|| self.owns(&key.topic));
            if !mine {
                continue;
            }
            // A start is moving this topic's partitions: none is aligned (truncated) before
            // they all are, so a start that fails part-way can put every one of them back.
            if self.starting_topic.lock().as_deref() == Some(key.topic.as_str()) {
                continue;
            }
            if let Some(target) = e.state.due_retry(self.now()) {
                let was_paused = was_paused(&e.state);
                match self.move_to(&mut e, target) {
                    Ok(()) => {
                        self.ensure_leader_epoch(&key, &mut e);
                        self.pause_again(&key, &mut e, was_paused);
                    }
                    // Its state partition went offline after the failure was recorded: no
                    // retry can be recorded, so none is made again.
                    Err(_) if self.store.unavailable(&e.state.key()).is_some() => {
                        let reason = e.state.failure.as_ref().map_or_else(
                            || "its retry could not be recorded".to_string(),
                            |f| format!("{} (its retry could not be recorded)", f.reason),
                        );
                        self.fail(&key, &mut e, &reason, false);
                    }
                    // Its state could not be written on a directory that stays online (a full
                    // disk): one more failed attempt, retried after a longer backoff rather
                    // than at every pass.
                    Err(err @ MirrorError::State(StateError::Engine(_))) => {
                        self.fail(
                            &key,
                            &mut e,
                            &format!("its retry could not be recorded: {}", ErrorChain(&err)),
                            true,
                        );
                    }
                    Err(_) => {}
                }
            }
            // A stop that did not finish: a retry of a failed one, or one a crash interrupted
            // (restored in STOPPING). Nothing else would ever finish it, and the topic stays
            // read-only until it does.
            if e.state.state == S::Stopping && self.finish_stop(&key, &mut e).is_ok() {
                stopped_topics.insert(key.topic.clone());
            }
            if e.state.state == S::LogAlignment {
                let Some(dest) = self.mirror_destination(&key) else {
                    continue;
                };
                // Failback (spec §8): if the source mirrors this topic from us and has stopped,
                // its last mirror epoch says how much of our log it holds: keep that, drop what
                // we wrote after the split, fetch the rest. A source with no mirror of us: the
                // partition is copied from scratch (LME −1). A restart keeps MIRRORING and
                // resumes from the log end instead.
                let span = |d: &Arc<PartitionHandle>| {
                    let log = d.read();
                    (log.log_start_offset(), log.log_end_offset())
                };
                let before = span(&dest);
                let r = match self.last_mirror_epoch_of(&key, e.state.topic_id) {
                    // A source without the lookup (a plain Kafka cluster, a node not upgraded
                    // yet) cannot say whether it mirrored us: copying from scratch would drop
                    // our whole log on its word. Only a log with nothing in it is copied so.
                    Err(MirrorError::Source(SourceError::Unsupported(what)))
                        if before.0 != before.1 =>
                    {
                        Err(MirrorError::Invalid(format!(
                            "the source cannot answer the last-mirror-epoch lookup ({what}), and \
                             this partition holds offsets {}..{}: copying it from scratch would \
                             drop them; upgrade the source, or delete the topic here and start \
                             mirroring it again",
                            before.0.get(),
                            before.1.get()
                        )))
                    }
                    Err(MirrorError::Source(SourceError::Unsupported(_))) => Ok(None),
                    r => r,
                };
                let r = r
                    .and_then(|lme| {
                        let (epoch, end) = lme.unwrap_or((LeaderEpoch::NONE, Offset(-1)));
                        align_to_last_mirror_epoch(&dest, epoch)?;
                        if end.get() >= 0 && dest.read().log_end_offset() > end {
                            dest.write().truncate_to(end)?;
                        }
                        if epoch != LeaderEpoch::NONE {
                            tracing::info!(mirror = %self.config.name, partition = %key, last_mirror_epoch = epoch.get(), end = end.get(), "failback: aligned to the source's last mirror epoch");
                        }
                        Ok(())
                    })
                    .and_then(|_| self.move_to(&mut e, S::Mirroring));
                // The alignment truncated the log: its long polls look again.
                if span(&dest) != before {
                    self.topics_api.appended(std::slice::from_ref(&key));
                }
                match r {
                    Ok(()) => {
                        self.ensure_leader_epoch(&key, &mut e);
                        // A partition of a paused topic: paused before anything fetches it.
                        self.pause_again(&key, &mut e, false);
                    }
                    Err(err) => self.fail(
                        &key,
                        &mut e,
                        &format!("log alignment failed: {}", ErrorChain(&err)),
                        true,
                    ),
                }
            }
            // It was not MIRRORING when this pass came to it (those are skipped above).
            reached_mirroring |= e.state.state == S::Mirroring;
        }
        // Its fetcher starts now, not at the pool's next pass (once per pass: a pool pass
        // walks every partition, and this one may have moved thousands).
        if reached_mirroring {
            self.pool_wake.notify();
        }
        for topic in stopped_topics {
            if let Err(err) = self.open_if_stopped(&topic) {
                tracing::warn!(mirror = %self.config.name, topic, "making the stopped topic writable failed: {err}");
            }
        }
    }

    /// The source's answer to the last-mirror-epoch lookup for `key` (`None` without a local
    /// cluster id or an answer).
    fn last_mirror_epoch_of(
        &self,
        key: &TopicPartition,
        topic_id: [u8; 16],
    ) -> Result<Option<(LeaderEpoch, Offset)>, MirrorError> {
        let Some(me) = &self.config.local_cluster_id else {
            return Ok(None);
        };
        Ok(self.source.last_mirror_epoch(me, topic_id, key.partition)?)
    }

    /// Refreshes source metadata: leaders and epochs, a changed cluster id (fails every
    /// partition, not retryable), deleted topics (missing on two consecutive syncs: FAILED, not
    /// retryable), grown partition counts (new partitions start); then discovery, topic config
    /// sync and group offset sync ([`sync_groups`](Self::sync_groups), whose failure is logged
    /// and retried on the next sync).
    ///
    /// # Errors
    /// The source is unreachable (nothing changes; the next sync tries again).
    pub fn sync(&self) -> Result<(), MirrorError> {
        self.sync_topics()?;
        if let Err(e) = self.sync_groups() {
            tracing::warn!(mirror = %self.config.name, "group offset sync failed: {e}");
        }
        Ok(())
    }

    fn sync_topics(&self) -> Result<(), MirrorError> {
        // A failed discovery (a changed source cluster id among others) must not skip the checks
        // below, which fail the partitions for it.
        if let Err(e) = self.discover() {
            tracing::warn!(mirror = %self.config.name, "discovering source topics failed: {e}");
        }
        self.stop_excluded();
        let names: Vec<String> = self.topics.lock().keys().cloned().collect();
        if names.is_empty() {
            return Ok(());
        }
        for name in &names {
            self.sync_topic_configs(name);
        }
        let md = self.source.metadata(Some(&names))?;
        if let Err(MirrorError::Invalid(reason)) = self.check_cluster_id(&md.cluster_id) {
            for (key, entry) in self.partitions.lock().iter() {
                let mut e = entry.lock();
                if e.state.state != S::Stopped {
                    self.fail(key, &mut e, &reason, false);
                }
            }
            return Ok(());
        }
        for t in md.topics {
            // A failed-over topic (a partition stopped or stopping: writable, owned by local
            // producers) or one an exclude pattern matches takes nothing more from the source,
            // not even a partition the source added: starting one would make the whole topic
            // read-only again and mirror into a topic that is no longer a mirror.
            let failed_over = self.is_excluded(&t.name)
                || !self.owns(&t.name)
                || self
                    .topic_states(&t.name)
                    .iter()
                    .any(|s| matches!(s, S::Stopped | S::Stopping));
            let mut topics = self.topics.lock();
            let Some(info) = topics.get_mut(&t.name) else {
                continue;
            };
            if t.error != 0 && t.error != crate::partition::codes::UNKNOWN_TOPIC_OR_PARTITION {
                // Not an answer about the topic's existence (TOPIC_AUTHORIZATION_FAILED after an
                // ACL change, LEADER_NOT_AVAILABLE still after the client's retries): nothing
                // changes, and the count of syncs it was missing on stays as it was.
                tracing::warn!(mirror = %self.config.name, topic = t.name, error = t.error, "the source's metadata refused a mirrored topic");
                continue;
            }
            if t.error == crate::partition::codes::UNKNOWN_TOPIC_OR_PARTITION
                || t.partitions.is_empty()
            {
                info.missing_syncs += 1;
                if info.missing_syncs >= 2 {
                    let reason = format!(
                        "source topic {} was deleted (missing on two consecutive syncs)",
                        t.name
                    );
                    self.fail_topic(&t.name, &reason);
                }
                continue;
            }
            info.missing_syncs = 0;
            if info.id != [0; 16] && t.id != [0; 16] && t.id != info.id {
                // Deleted and recreated between two syncs: same name, new offsets from 0. The
                // destination's copy belongs to the old topic; continuing would splice two
                // topics into one log, so every partition fails, for good.
                let reason = format!(
                    "source topic {} was deleted and recreated (topic id {} is now {}); its \
                     offsets started over, so the mirror cannot continue it: stop the mirror \
                     topic, delete it on the destination and start mirroring it again",
                    t.name,
                    mirrorlog_index::TopicId(info.id),
                    mirrorlog_index::TopicId(t.id)
                );
                drop(topics);
                self.fail_topic(&t.name, &reason);
                continue;
            }
            if failed_over {
                continue;
            }
            let grown = t.partitions.len() as i32 > info.partitions;
            let id = info.id;
            drop(topics);
            let mut missing = vec![];
            for p in &t.partitions {
                let key = tp(&t.name, p.partition);
                let known = self.partitions.lock().get(&key).cloned();
                match known {
                    Some(entry) => self.adopt_source_leader(&key, &mut entry.lock(), p),
                    None => missing.push(p),
                }
            }
            if !grown && missing.is_empty() {
                continue;
            }
            // Partition growth creates destination partitions and starts them, as a start does,
            // so under the same locks and claim check: serialised with an operator's start (which
            // may be starting this very partition) and stop, and with releasing the claim. The
            // checks above ran unlocked; a stop of this topic and another mirror's start may have
            // come in between, and a partition started then would be this mirror's, in
            // LOG_ALIGNMENT, in a topic it no longer writes (drive skips it) and could not stop.
            let _serial = self.starting.lock();
            let _claiming = self.claim_lock.lock();
            if !self.owns(&t.name)
                || self.is_excluded(&t.name)
                || self
                    .topic_states(&t.name)
                    .iter()
                    .any(|s| matches!(s, S::Stopped | S::Stopping))
            {
                continue;
            }
            if grown {
                // Counted as grown only once the destination has the partitions: a failure here
                // is tried again at the next sync (the new partitions are not started without
                // their logs).
                self.topics_api
                    .ensure_mirror_topic(&t.name, id, t.partitions.len() as i32)
                    .map_err(MirrorError::Invalid)?;
                if let Some(info) = self.topics.lock().get_mut(&t.name) {
                    info.partitions = info.partitions.max(t.partitions.len() as i32);
                }
            }
            for p in missing {
                self.start_partition(&t.name, id, p.partition, p.leader, p.leader_epoch)?;
            }
        }
        Ok(())
    }

    /// Takes the leader and epoch the source's metadata names for `key`'s partition, unless the
    /// metadata is older than what `e` knows, and keeps the destination's epoch above it.
    fn adopt_source_leader(&self, key: &TopicPartition, e: &mut Entry, p: &SourcePartition) {
        // Stale metadata (a broker that has not heard of the newer leader yet) never moves the
        // leader back: Kafka's clients keep the newer epoch. Metadata naming no epoch (below
        // Metadata v7, or a server that leaves it out) has nothing to compare: taken as it is,
        // as Kafka's clients take it (`Metadata.updateLatestMetadata`), else an epoch read in
        // records would make every later answer look stale and the leader would never move.
        let none_named = p.leader_epoch.get() < 0;
        if none_named || p.leader_epoch >= e.source_epoch {
            if p.leader != e.source_leader || p.leader_epoch > e.leader_epoch {
                // An error of the old leader (or of its old epoch: FENCED_LEADER_EPOCH) says
                // nothing about the new one.
                e.fetch_backoff_until = i64::MIN;
            }
            if p.leader != e.source_leader || p.leader_epoch > e.source_epoch {
                // A new leader (an unclean election among others) may have a log that
                // diverges from what was copied (Kafka's fetcher truncates again then).
                e.truncating = true;
            }
            e.source_leader = p.leader;
            // The epoch records told of is kept when none is named (the destination's epoch
            // stays above it).
            e.source_epoch = e.source_epoch.max(p.leader_epoch);
            e.leader_epoch = p.leader_epoch;
        } else {
            tracing::debug!(mirror = %self.config.name, partition = %key, known = e.source_epoch.get(), answered = p.leader_epoch.get(), "ignored stale source metadata");
        }
        self.ensure_leader_epoch(key, e);
    }

    /// KIP-951: takes the leader that a NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH answer
    /// names for `key`'s partition (its [`PartitionData::current_leader`]), as Kafka's consumer
    /// does (`Metadata.updatePartitionLeadership`), so the next fetch goes there without a
    /// metadata round trip: only a leader and an epoch both named, the epoch newer than any
    /// heard of (an older or equal one is never taken, as stale metadata is not). Returns
    /// whether it was taken; if not, the caller asks the source's metadata.
    fn adopt_leader_hint(&self, key: &TopicPartition, entry: &EntryRef, d: &PartitionData) -> bool {
        use crate::partition::codes::{FENCED_LEADER_EPOCH, NOT_LEADER_OR_FOLLOWER};
        let Some(hint) = d.current_leader else {
            return false;
        };
        if !matches!(d.error, NOT_LEADER_OR_FOLLOWER | FENCED_LEADER_EPOCH)
            || hint.id < 0
            || hint.epoch.get() < 0
        {
            return false;
        }
        let mut e = entry.lock();
        if hint.epoch <= e.source_epoch {
            tracing::debug!(mirror = %self.config.name, partition = %key, known = e.source_epoch.get(), hinted = hint.epoch.get(), "ignored a fetch answer's leader hint that is not newer than the epoch known");
            return false;
        }
        let moved = hint.id != e.source_leader;
        let named = SourcePartition {
            partition: key.partition,
            leader: hint.id,
            leader_epoch: hint.epoch,
            error: 0,
        };
        self.adopt_source_leader(key, &mut e, &named);
        drop(e);
        if moved {
            // Its new leader's fetcher may not be running yet.
            self.pool_wake.notify();
        }
        true
    }

    /// Asks the source's metadata for the leaders of `topics` now — a fetch was answered "not
    /// the leader" (or its node did not answer), or a partition has no leader — instead of
    /// fetching from the old leader (or not at all) until the next sync. At most once per [`LEADER_REFRESH_MIN_INTERVAL_MS`], so a node that keeps
    /// answering so (metadata that lags behind it) costs one metadata call per interval; topics
    /// asked for within the interval are asked with the next refresh, whichever fetch (or pass
    /// of the fetcher pool) makes it, not dropped (their partitions, backed off after an error,
    /// would wait for a refresh of their own).
    fn refresh_leaders(&self, topics: &BTreeSet<String>) {
        if topics.is_empty() {
            return;
        }
        let names: Vec<String> = {
            let now = self.now();
            let mut guard = self.leaders_refreshed_at.lock();
            let (last, pending) = &mut *guard;
            pending.extend(topics.iter().cloned());
            if now.saturating_sub(*last) < LEADER_REFRESH_MIN_INTERVAL_MS {
                return;
            }
            *last = now;
            std::mem::take(pending).into_iter().collect()
        };
        let md = match self.source.metadata(Some(&names)) {
            Ok(md) => md,
            Err(err) => {
                tracing::debug!(mirror = %self.config.name, "refreshing source leaders failed: {err}");
                self.leaders_refreshed_at.lock().1.extend(names);
                return;
            }
        };
        for t in md.topics.iter().filter(|t| t.error == 0) {
            for p in &t.partitions {
                let key = tp(&t.name, p.partition);
                let known = self.partitions.lock().get(&key).cloned();
                if let Some(entry) = known {
                    self.adopt_source_leader(&key, &mut entry.lock(), p);
                }
            }
        }
    }

    /// Where [`sync_groups`](Self::sync_groups) commits: the destination's group coordinator.
    /// Without one (the default), group offsets are not synced.
    pub fn set_group_sink(&self, sink: Arc<dyn GroupOffsetsSink>) {
        *self.group_sink.lock() = Some(sink);
    }

    /// What the last group offset sync did.
    pub fn last_group_sync(&self) -> Option<GroupSyncReport> {
        self.last_group_sync.lock().clone()
    }

    /// Group offset sync (spec §11): the source's groups matching `mirror.groups.include` and
    /// not `mirror.groups.exclude` have their committed offsets on this mirror's partitions —
    /// those not STOPPED: a failed-over partition belongs to local consumers — committed on the
    /// destination with the double clamp; groups with members on the destination are skipped
    /// (and counted). Runs at the end of every [`sync`](Self::sync).
    ///
    /// # Errors
    /// The source is unreachable, or a commit failed.
    pub fn sync_groups(&self) -> Result<Option<GroupSyncReport>, MirrorError> {
        let Some(sink) = self.group_sink.lock().clone() else {
            return Ok(None);
        };
        let mut types = GroupSyncReport::default();
        let groups: Vec<String> = {
            let listed = self.source.list_groups()?;
            let f = self.filters.lock();
            let listed = listed
                .into_iter()
                .filter(|g| {
                    f.groups_include_re.iter().any(|r| r.is_match(&g.group_id))
                        && !f.groups_exclude_re.iter().any(|r| r.is_match(&g.group_id))
                })
                .collect();
            crate::group_sync::split_group_types(listed, sink.as_ref(), &mut types)
        };
        for c in &types.collisions {
            tracing::warn!(mirror = %self.config.name, "group offset sync: {c}");
        }
        let mirrored: std::collections::HashSet<TopicPartition> = self
            .partitions
            .lock()
            .iter()
            // Only partitions still being mirrored: a STOPPING one (or one whose stop failed) is
            // being handed to local consumers.
            .filter(|(_, e)| {
                let st = &e.lock().state;
                let stop_failed = st.state == S::Failed
                    && st
                        .failure
                        .as_ref()
                        .is_some_and(|f| f.previous_state == S::Stopping);
                !(stop_failed || matches!(st.state, S::Stopped | S::Stopping))
            })
            // And still a mirror partition: not an ordinary topic a client created under a
            // deleted mirror topic's name.
            .filter(|(k, _)| self.mirror_destination(k).is_some())
            .map(|(k, _)| k.clone())
            .collect();
        let report = GroupSyncReport {
            collisions: types.collisions,
            skipped_share: types.skipped_share,
            ..sync_group_offsets_where(
                self.source.as_ref(),
                &self.logs,
                sink.as_ref(),
                &groups,
                &|tp| mirrored.contains(tp),
            )?
        };
        if report.clamped > 0 || report.kept_ahead > 0 || !report.skipped_active.is_empty() {
            tracing::debug!(mirror = %self.config.name, committed = report.committed, clamped = report.clamped, kept_ahead = report.kept_ahead, skipped_active = ?report.skipped_active, "group offsets synced");
        }
        *self.last_group_sync.lock() = Some(report.clone());
        Ok(Some(report))
    }

    /// Discovery: with `mirror.topics.include` set, lists the source's topics and starts each
    /// one that matches an include pattern, no exclude pattern, and is not in the mirror yet.
    /// A topic that fails to start is logged and tried again on the next sync.
    ///
    /// # Errors
    /// The source is unreachable.
    pub fn discover(&self) -> Result<Vec<String>, MirrorError> {
        if self.filters.lock().include_re.is_empty() {
            return Ok(vec![]);
        }
        let mut started = vec![];
        for name in self.source_topic_names()? {
            if !self.is_included(&name) || self.topics.lock().contains_key(&name) {
                continue;
            }
            // Another mirror's topic (not STOPPED there): not this mirror's to take. Skipped
            // quietly, as every sync would find it again; an operator's pattern start answers
            // it with TOPIC_ALREADY_IN_CLUSTER_MIRROR.
            if let Some(owner) = self.claims.owner(&name)
                && owner != self.config.name
            {
                tracing::debug!(mirror = %self.config.name, topic = %name, %owner, "a source topic matching mirror.topics.include is mirrored by another cluster mirror; not started");
                continue;
            }
            match self.start_topics_inner(std::slice::from_ref(&name), true) {
                Ok(()) => {
                    tracing::info!(mirror = %self.config.name, topic = %name, "discovered a source topic matching mirror.topics.include; mirroring it");
                    started.push(name);
                }
                Err(e) => {
                    tracing::warn!(mirror = %self.config.name, topic = %name, "cannot start a discovered topic: {e}")
                }
            }
        }
        Ok(started)
    }

    /// `mirror.topics.exclude` wins over everything (KIP-1279 §6): a mirrored topic that an
    /// exclude pattern matches now — one added since the topic started; starting a matching
    /// topic is refused — is stopped, i.e. failed over and writable, as
    /// [`stop_topic`](Self::stop_topic) does (from any state, PAUSED included). A stop that fails
    /// is logged and tried again at the next sync.
    fn stop_excluded(&self) {
        // Serialised with starts: an operator's start half-way through a topic's partitions
        // would otherwise see the first ones stopped (the topic made writable) and go on
        // starting the rest into a writable topic.
        let _serial = self.starting.lock();
        let names: Vec<String> = self.topics.lock().keys().cloned().collect();
        for name in names {
            if !self.is_excluded(&name) || self.topic_states(&name).iter().all(|s| *s == S::Stopped)
            {
                continue;
            }
            match self.stop_topic_serialised(&name) {
                Ok(()) => {
                    tracing::info!(mirror = %self.config.name, topic = %name, "stopped a mirror topic that now matches mirror.topics.exclude (it is writable now)")
                }
                Err(e) => {
                    tracing::warn!(mirror = %self.config.name, topic = %name, "a mirror topic matches mirror.topics.exclude but cannot be stopped: {e}")
                }
            }
        }
    }

    /// Copies `topic`'s source configs (those set on the source, minus
    /// `mirror.topic.properties.exclude`) to the destination topic when they changed since the
    /// last copy. Skipped for a STOPPED topic (it belongs to its local users now). Failures are
    /// logged; the next sync tries again.
    fn sync_topic_configs(&self, topic: &str) {
        let states = self.topic_states(topic);
        if states.is_empty() || states.iter().all(|s| *s == S::Stopped) {
            return;
        }
        self.copy_topic_configs(topic);
    }

    /// Copies the source topic's configs (less `mirror.topic.properties.exclude`) to the
    /// destination topic when they changed since the last copy. Returns whether it wrote them.
    fn copy_topic_configs(&self, topic: &str) -> bool {
        self.source_topic_configs(topic)
            .is_some_and(|configs| self.apply_source_configs(topic, configs))
    }

    /// The source topic's configs less `mirror.topic.properties.exclude`; `None` (logged) when
    /// the source cannot say.
    fn source_topic_configs(&self, topic: &str) -> Option<Vec<(String, String)>> {
        let configs = match self.source.topic_configs(topic) {
            Ok(c) => c,
            Err(e) => {
                tracing::debug!(mirror = %self.config.name, topic, "cannot read source topic configs: {e}");
                return None;
            }
        };
        let f = self.filters.lock();
        Some(
            configs
                .into_iter()
                .filter(|(k, _)| !f.properties_exclude_re.iter().any(|r| r.is_match(k)))
                .collect(),
        )
    }

    /// Applies `configs`, the source's read by
    /// [`source_topic_configs`](Self::source_topic_configs), to the destination topic when they
    /// changed since the last copy. Returns whether it wrote them.
    fn apply_source_configs(&self, topic: &str, configs: Vec<(String, String)>) -> bool {
        if self
            .topics
            .lock()
            .get(topic)
            .is_some_and(|t| t.synced_configs.as_ref() == Some(&configs))
        {
            return false;
        }
        // Keys copied last time that the source no longer sets (an override deleted there): the
        // destination goes back to its own default for them, or a deleted `retention.ms=60000`
        // would keep deleting mirrored data the source keeps.
        let previous = self
            .topics
            .lock()
            .get(topic)
            .and_then(|t| t.synced_configs.clone());
        let removed: Vec<String> = match previous {
            Some(prev) => prev
                .iter()
                .filter(|(k, _)| !configs.iter().any(|(c, _)| c == k))
                .map(|(k, _)| k.clone())
                .collect(),
            // The first copy since this process started: the destination's own keys that the
            // source no longer sets were deleted there while the mirror was down (keys excluded
            // from copying are the destination's to keep).
            None => {
                let f = self.filters.lock();
                self.topics_api
                    .topic_overrides(topic)
                    .into_iter()
                    .map(|(k, _)| k)
                    .filter(|k| !configs.iter().any(|(c, _)| c == k))
                    .filter(|k| !f.properties_exclude_re.iter().any(|r| r.is_match(k)))
                    .collect()
            }
        };
        match self
            .topics_api
            .apply_topic_configs(topic, &configs, &removed)
        {
            Ok(()) => {
                if let Some(t) = self.topics.lock().get_mut(topic) {
                    t.synced_configs = Some(configs);
                }
                true
            }
            Err(e) => {
                tracing::warn!(mirror = %self.config.name, topic, "cannot apply source topic configs: {e}");
                // A failed write may have changed some partitions' configs.
                true
            }
        }
    }

    /// One fetch round, by hand, of fetcher index `thread` of every source node: fetches for
    /// the MIRRORING partitions whose hash picks `thread`, one request per source leader (one
    /// after another), and applies the answers. Returns the bytes appended.
    pub fn fetch_round(&self, thread: usize) -> u64 {
        let scope = FetchScope {
            source_node: None,
            index: thread,
        };
        self.fetch_answers(scope, None, &|| {}, self.config.response_max_bytes)
            .into_iter()
            .map(|a| self.apply_answer(a, None))
            .sum()
    }

    /// A pipelined fetcher for fetcher index `thread` of every source node (asked one after
    /// another), to drive by hand.
    pub fn pipelined_fetcher(&self, thread: usize) -> PipelinedFetcher {
        self.pipelined_fetcher_for(None, thread)
    }

    /// The pipelined fetcher `(source_node, index)` of [`run`](Self::run), to drive by hand: it
    /// fetches only the MIRRORING partitions led by `source_node` whose hash picks `index`.
    pub fn pipelined_fetcher_of(&self, source_node: i32, index: usize) -> PipelinedFetcher {
        self.pipelined_fetcher_for(Some(source_node), index)
    }

    fn pipelined_fetcher_for(&self, source_node: Option<i32>, index: usize) -> PipelinedFetcher {
        PipelinedFetcher {
            scope: FetchScope { source_node, index },
            cursors: FetchCursors::default(),
            shared: Arc::default(),
        }
    }

    /// The fetchers [`run`](Self::run) has running, as (source node, fetcher index), in order.
    pub fn running_fetchers(&self) -> Vec<(i32, usize)> {
        self.fetchers.lock().running.keys().copied().collect()
    }

    /// One fetch round of `fetcher`, ahead of what is applied: each partition is fetched where
    /// the last answer fetched for it ended (its destination log end when there is none, or the
    /// applier reported that answer as not applied as guessed). The caller applies the answers
    /// in the order fetched with [`apply_ahead`](Self::apply_ahead); an answer whose fetch offset
    /// the log end has not reached by then is skipped, so no order of calls can append over a
    /// gap. Asks for at most `max_bytes`.
    pub fn fetch_ahead(&self, fetcher: &mut PipelinedFetcher, max_bytes: i32) -> FetchedAhead {
        self.fetch_ahead_settling(fetcher, &|| {}, max_bytes)
    }

    /// [`fetch_ahead`](Self::fetch_ahead), running `settle` before the first log end is read.
    fn fetch_ahead_settling(
        &self,
        fetcher: &mut PipelinedFetcher,
        settle: &dyn Fn(),
        max_bytes: i32,
    ) -> FetchedAhead {
        for key in std::mem::take(&mut *fetcher.shared.resync.lock()) {
            fetcher.cursors.at.remove(&key);
        }
        FetchedAhead(self.fetch_answers(
            fetcher.scope,
            Some(&mut fetcher.cursors),
            settle,
            max_bytes,
        ))
    }

    /// Applies answers of [`fetch_ahead`](Self::fetch_ahead). Returns the bytes appended.
    pub fn apply_ahead(&self, fetcher: &PipelinedFetcher, fetched: FetchedAhead) -> u64 {
        self.apply_fetched_ahead(&fetcher.shared, fetched)
    }

    fn apply_fetched_ahead(&self, shared: &Pipeline, fetched: FetchedAhead) -> u64 {
        let bytes = fetched.record_bytes();
        let n = fetched
            .0
            .into_iter()
            .map(|a| self.apply_answer(a, Some(shared)))
            .sum();
        shared.applied_one(bytes);
        n
    }

    /// Sends one fetch per source leader for the MIRRORING partitions of `scope`, each at most
    /// `max_bytes`, and returns the answers,
    /// not applied. Each partition is fetched at its destination log end, or with `cursors` (a
    /// pipelined fetcher) where the last answer ended, which may not be appended yet; the
    /// cursors are moved past each answer, and those of partitions no longer the scope's (not
    /// MIRRORING, led by another node) are dropped. `settle` runs before the first log end is
    /// read (a pipelined fetcher waits there for its applier, so the log end is not one an
    /// answer being applied is about to move).
    fn fetch_answers(
        &self,
        scope: FetchScope,
        mut cursors: Option<&mut FetchCursors>,
        settle: &dyn Fn(),
        max_bytes: i32,
    ) -> Vec<Answer> {
        let mut settled = false;
        // Found in the partition map each round (the pool hands a fetcher no list: 10,000
        // partitions' keys held and handed again every pass cost ~3 MiB of peak RSS).
        let mine: Vec<(TopicPartition, EntryRef)> = self
            .partitions
            .lock()
            .iter()
            .filter(|(k, _)| fetcher_index(k, self.config.fetcher_threads) == scope.index)
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let theirs = |leader: i32| scope.source_node.is_some_and(|n| n != leader);
        if let Some(c) = cursors.as_deref_mut() {
            // Partitions handed to another fetcher (or stopped) since the last round: a cursor
            // kept would be stale if one came back.
            let keys: std::collections::HashSet<&TopicPartition> =
                mine.iter().map(|(k, _)| k).collect();
            c.at.retain(|k, _| keys.contains(k));
        }
        let mut by_leader: HashMap<i32, Vec<InFlight>> = HashMap::new();
        let mut stale_leaders = BTreeSet::new();
        for (key, entry) in mine {
            let mut e = entry.lock();
            if e.state.state != S::Mirroring || theirs(e.source_leader) {
                // Another fetcher's now (its leader moved), or not fetched at all.
                if let Some(c) = cursors.as_deref_mut() {
                    c.at.remove(&key);
                }
                continue;
            }
            if self.now() < e.fetch_backoff_until {
                continue;
            }
            if e.source_leader < 0 {
                // The source's metadata named no leader (an election under way): ask it again
                // now, not at the next sync, as Kafka's consumer requests a metadata update for
                // a partition without one (rate-limited as any leader refresh).
                stale_leaders.insert(key.topic.clone());
                continue;
            }
            let Some(dest) = self.mirror_destination(&key) else {
                continue;
            };
            let (mut leader, epoch) = (e.source_leader, e.state.state_epoch);
            if e.truncating {
                drop(e);
                if !settled {
                    // The check reads the log end: the answers in flight are applied first.
                    settle();
                    settled = true;
                }
                if let Some(c) = cursors.as_deref_mut() {
                    c.at.remove(&key);
                }
                match self.check_divergence_before_fetch(&key, &entry, epoch, leader, &dest) {
                    BeforeFetch::Fetch => {}
                    BeforeFetch::Wait => continue,
                    BeforeFetch::LeaderUnreachable => {
                        stale_leaders.insert(key.topic.clone());
                        continue;
                    }
                }
                e = entry.lock();
                if !e.fetchable_at(epoch) || theirs(e.source_leader) {
                    continue;
                }
                leader = e.source_leader;
            }
            let cursor = cursors
                .as_deref()
                .and_then(|c| c.at.get(&key))
                .filter(|c| c.state_epoch == epoch)
                .map(|c| (c.offset, c.last_epoch));
            let (offset, last_epoch) = match cursor {
                Some(c) => c,
                None => {
                    if !settled {
                        // The applier needs this entry's lock to apply the answers `settle`
                        // waits for: let go of it meanwhile (holding it froze the fetcher and
                        // its applier for good), then look again.
                        drop(e);
                        settle();
                        settled = true;
                        e = entry.lock();
                        if !e.fetchable_at(epoch) || theirs(e.source_leader) {
                            continue;
                        }
                        leader = e.source_leader;
                    }
                    fetch_position(&dest)
                }
            };
            // Kafka's fetchers send the leader epoch their metadata named (KIP-320): a node
            // that no longer leads in that epoch answers FENCED_LEADER_EPOCH (or, not yet
            // told of it, UNKNOWN_LEADER_EPOCH) instead of records. Dropped on the wire below
            // Fetch v9, which has no such field.
            let current_leader_epoch = e.leader_epoch;
            drop(e);
            // After the entry's lock: the sync thread takes `topics` and then entries.
            let topic_id = self.topics.lock().get(&key.topic).map_or([0; 16], |t| t.id);
            let pf = PartitionFetch {
                topic: key.topic.clone(),
                topic_id,
                partition: key.partition,
                fetch_offset: offset,
                last_fetched_epoch: last_epoch,
                current_leader_epoch,
                max_bytes: self.config.partition_fetch_max_bytes,
            };
            by_leader
                .entry(leader)
                .or_default()
                .push((key, entry, pf, epoch));
        }
        let mut answers = vec![];
        // Only the first partition of an answer with data may exceed its limit with one whole
        // batch (KIP-74): each round starts at another partition, so a batch above the limit
        // is not kept out for good by busier partitions ahead of it (Kafka's fetchers move
        // the partitions they got data for to the end).
        let rotation = match cursors.as_deref_mut() {
            Some(c) => {
                c.rounds = c.rounds.wrapping_add(1);
                c.rounds
            }
            None => self.fetch_rotation.fetch_add(1, Ordering::Relaxed),
        };
        for (leader, mut parts) in by_leader {
            let n = parts.len();
            parts.rotate_left(rotation % n);
            let req = FetchRequest {
                partitions: parts.iter().map(|p| p.2.clone()).collect(),
                max_wait_ms: self.config.max_wait_ms,
                min_bytes: 1,
                max_bytes,
            };
            let response = match self.source.fetch(leader, &req) {
                Ok(r) => r,
                Err(e) => {
                    tracing::debug!(mirror = %self.config.name, leader, "fetch failed: {e}");
                    // The node may be gone for good (its partitions led elsewhere now).
                    stale_leaders.extend(parts.iter().map(|p| p.0.topic.clone()));
                    continue;
                }
            };
            for d in (response.partitions.iter()).filter(|d| is_leader_change_error(d.error)) {
                let hint_taken = (parts.iter())
                    .find(|p| p.0.topic == d.topic && p.0.partition == d.partition)
                    .is_some_and(|p| self.adopt_leader_hint(&p.0, &p.1, d));
                if !hint_taken {
                    stale_leaders.insert(d.topic.clone());
                }
            }
            if let Some(c) = cursors.as_deref_mut() {
                for data in &response.partitions {
                    let Some((key, _, pf, epoch)) = parts
                        .iter()
                        .find(|p| p.0.topic == data.topic && p.0.partition == data.partition)
                    else {
                        continue;
                    };
                    let (offset, last_epoch) = match next_fetch_position(data, pf.fetch_offset) {
                        NextFetch::After(offset, last_epoch) => (offset, last_epoch),
                        NextFetch::Same => (pf.fetch_offset, pf.last_fetched_epoch),
                        NextFetch::FromLog => {
                            c.at.remove(key);
                            continue;
                        }
                    };
                    c.at.insert(
                        key.clone(),
                        FetchCursor {
                            offset,
                            last_epoch,
                            state_epoch: *epoch,
                        },
                    );
                }
            }
            answers.push(Answer {
                leader,
                parts,
                response,
            });
        }
        self.refresh_leaders(&stale_leaders);
        answers
    }

    /// Applies one answer of [`fetch_answers`](Self::fetch_answers) to the destination
    /// partitions. A partition whose log end is not where its fetch started (an earlier answer
    /// of a pipelined fetcher failed, diverged or was dropped) skips the answer and, with
    /// `resync`, is named there so its fetcher asks again from the log end. Returns the bytes
    /// appended.
    fn apply_answer(&self, answer: Answer, resync: Option<&Pipeline>) -> u64 {
        let Answer {
            leader,
            parts,
            response: resp,
        } = answer;
        let mut appended = 0;
        // The partitions whose logs this answer changed: their long polls look again.
        let mut changed: Vec<TopicPartition> = Vec::new();
        let resync_later = |key: &TopicPartition| {
            if let Some(p) = resync {
                p.resync.lock().push(key.clone());
            }
        };
        for mut data in resp.partitions {
            let Some((key, entry, pf, epoch)) = parts
                .iter()
                .find(|p| p.0.topic == data.topic && p.0.partition == data.partition)
            else {
                continue;
            };
            let Some(dest) = self.mirror_destination(key) else {
                continue;
            };
            // Whether the answer still applies: a stop, pause or failure since the request
            // went out drops it; a log end elsewhere than its fetch offset has it asked again.
            let current = |e: &Entry| {
                if !e.mirroring_at(*epoch) {
                    return false;
                }
                if dest.read().log_end_offset() != pf.fetch_offset {
                    // Never append past a gap or over what is there: this answer was asked for
                    // at a position the log did not reach.
                    resync_later(key);
                    return false;
                }
                true
            };
            if data.error == crate::partition::codes::OFFSET_OUT_OF_RANGE
                && (data.log_start_offset.get() < 0 || data.high_watermark.get() < 0)
            {
                // Apache Kafka answers OFFSET_OUT_OF_RANGE with its log start and high watermark
                // unknown (−1): ask for them, as Kafka's own follower does, before deciding
                // between starting over at the log start and a truncation at the log end. Asked
                // without the entry's lock (a stop, pause or describe does not wait for a slow
                // source); the answer is applied only if the partition did not move meanwhile.
                if !current(&entry.lock()) {
                    continue;
                }
                match self.source_log_range(key) {
                    Ok((start, end)) => {
                        data.log_start_offset = start;
                        data.high_watermark = end;
                    }
                    Err(err) => {
                        tracing::debug!(mirror = %self.config.name, partition = %key, "out of range, and the source's offsets could not be read: {err}");
                        resync_later(key);
                        continue;
                    }
                }
            }
            let mut e = entry.lock();
            if !current(&e) {
                continue;
            }
            if let NextFetch::After(_, newest) = next_fetch_position(&data, pf.fetch_offset) {
                let known = dest.read().epoch_cache().latest_epoch();
                if newest > e.source_epoch.max(known.unwrap_or(LeaderEpoch::NONE)) {
                    // Records of a source leader epoch not heard of: its leader may have been
                    // elected uncleanly, which a source below Fetch v12 cannot report (no
                    // `DivergingEpoch`). Appended at our log end, they would hide the records
                    // it lost below them: the OffsetForLeaderEpoch check would then ask about
                    // the new epoch, which ends at or past our log end. Kafka's follower never
                    // appends them unchecked (the leader fences a fetch with an older
                    // `current_leader_epoch`, and the follower truncates before it fetches in
                    // a new epoch). A source that fences (Fetch v9+, a leader epoch named in
                    // its metadata) never answers them: they are at most the epoch sent, which
                    // is at most `source_epoch`. One that does not (below Fetch v9, or no epoch
                    // in its metadata) may: the records tell, the partition is truncating
                    // again, the epoch known, and the answer asked for again once checked.
                    e.source_epoch = newest;
                    e.truncating = true;
                    resync_later(key);
                    continue;
                }
            }
            let outcome = apply_fetched(&dest, pf.fetch_offset, &data);
            // The fetcher guessed where this answer leaves the log; anything else (a refused
            // batch, a divergence, an error) and it must ask from the log end again.
            let as_guessed = match (&outcome, next_fetch_position(&data, pf.fetch_offset)) {
                (Ok(FetchOutcome::Appended { log_end, .. }), NextFetch::After(next, _)) => {
                    *log_end == next
                }
                (Ok(FetchOutcome::Empty { .. }), NextFetch::Same) => true,
                _ => false,
            };
            if !as_guessed {
                resync_later(key);
            }
            match outcome {
                Ok(FetchOutcome::Appended {
                    bytes,
                    source_high_watermark,
                    epoch_bump,
                    ..
                }) => {
                    appended += bytes;
                    if bytes > 0 {
                        changed.push(key.clone());
                    }
                    if e.state.failure.is_some() {
                        // Mirroring again after a retry: earlier failures no longer count
                        // towards the attempt limit or the backoff. In memory (no state change
                        // to persist: the next persisted change carries it).
                        e.state.clear_failure();
                    }
                    e.source_hw = source_high_watermark;
                    if let Some(new_epoch) = epoch_bump {
                        self.record_epoch_bump(key, &mut e, new_epoch);
                    }
                }
                Ok(FetchOutcome::Empty {
                    source_high_watermark,
                }) => e.source_hw = source_high_watermark,
                Ok(FetchOutcome::Diverged {
                    truncate_to,
                    source,
                    ..
                }) => {
                    if self.on_divergence(key, &mut e, &dest, truncate_to, source, pf.fetch_offset)
                    {
                        changed.push(key.clone());
                    }
                }
                Ok(FetchOutcome::BelowSourceLogStart { source_log_start }) => {
                    changed.push(key.clone());
                    if let Err(err) = dest.write().truncate_fully_and_start_at(source_log_start) {
                        self.fail(
                            key,
                            &mut e,
                            &format!(
                                "restarting at the source's log start failed: {}",
                                ErrorChain(&err)
                            ),
                            true,
                        );
                    }
                }
                Ok(FetchOutcome::Retriable(code)) => {
                    tracing::debug!(mirror = %self.config.name, partition = %key, code, "retriable fetch error");
                    // Asked again after a pause (Kafka's `replica.fetch.backoff.ms`), not at
                    // every round — unless a leader refresh since moved it to another node or
                    // named a newer epoch (a FENCED_LEADER_EPOCH answered an epoch now past:
                    // Kafka's fetchers ask again once their metadata has the new one).
                    if e.source_leader == leader && e.leader_epoch <= pf.current_leader_epoch {
                        e.fetch_backoff_until = self.now().saturating_add(FETCH_ERROR_BACKOFF_MS);
                    }
                }
                Ok(FetchOutcome::Fatal(reason)) => self.fail(key, &mut e, &reason, true),
                Err(err) => self.fail(
                    key,
                    &mut e,
                    &format!("destination storage failed: {}", ErrorChain(&err)),
                    true,
                ),
            }
        }
        if !changed.is_empty() {
            self.topics_api.appended(&changed);
        }
        appended
    }

    /// The source's log start and end (high watermark) of `key`'s partition, two ListOffsets.
    fn source_log_range(&self, key: &TopicPartition) -> Result<(Offset, Offset), SourceError> {
        let spec = |s| {
            self.source
                .list_offset(&key.topic, key.partition, s)
                .map(|(o, _)| o)
        };
        Ok((
            spec(crate::source::OffsetSpec::Earliest)?,
            spec(crate::source::OffsetSpec::Latest)?,
        ))
    }

    /// The source's log disagrees with the destination's below `log_end` (an unclean election
    /// there; `source` is its `(epoch, end offset)` answer): with
    /// `mirror.support.unclean.leader.election`, ULE_RECOVERY truncates the log to `truncate_to`
    /// and the partition goes on MIRRORING; without, it goes FAILED, not retried. Returns whether
    /// the log may have changed (a long poll past the new end answers OFFSET_OUT_OF_RANGE now,
    /// not at its max wait).
    fn on_divergence(
        &self,
        key: &TopicPartition,
        e: &mut Entry,
        dest: &PartitionHandle,
        truncate_to: Offset,
        source: (LeaderEpoch, Offset),
        log_end: Offset,
    ) -> bool {
        if !self.config.support_unclean_leader_election {
            let reason = format!(
                "detected log truncation on the source (unclean leader election): it answered epoch {} ends at {}, \
                 below our log end {log_end}; mirror.support.unclean.leader.election is disabled — set it to true to \
                 truncate and continue, accepting the loss of the source's truncated records",
                source.0, source.1
            );
            self.fail(key, e, &reason, false);
            return false;
        }
        let r = self
            .move_to(e, S::UleRecovery)
            .and_then(|_| {
                dest.write()
                    .truncate_to(truncate_to)
                    .map_err(MirrorError::from)
            })
            .and_then(|_| self.move_to(e, S::Mirroring));
        if let Err(err) = r {
            self.fail(
                key,
                e,
                &format!("unclean-election recovery failed: {}", ErrorChain(&err)),
                true,
            );
        }
        true
    }

    /// Before a partition in Kafka's truncating state ([`Entry::truncating`]) is fetched from
    /// `leader`: a source whose fetches cannot report a divergence (Fetch below v12, Kafka before
    /// 2.7) is asked where the destination's latest epoch ends in its log (OffsetForLeaderEpoch,
    /// as Kafka's `ReplicaFetcherThread` asks such a leader), and the answer goes through the
    /// divergence rule a `DivergingEpoch` answer does, with the same decision
    /// ([`on_divergence`](Self::on_divergence)). The network calls run without the entry's lock;
    /// an answer is applied only if the partition's state and log end did not move meanwhile.
    fn check_divergence_before_fetch(
        &self,
        key: &TopicPartition,
        entry: &EntryRef,
        state_epoch: i32,
        leader: i32,
        dest: &PartitionHandle,
    ) -> BeforeFetch {
        let done = || {
            let mut e = entry.lock();
            if e.mirroring_at(state_epoch) {
                e.truncating = false;
            }
            BeforeFetch::Fetch
        };
        // Asked in the leader epoch the metadata names, as a fetch is (Kafka's follower sends
        // its `currentLeaderEpoch` in OffsetsForLeaderEpoch too): a node behind that epoch, or
        // past it, does not answer from a log the epoch's leader may not hold.
        let current_leader_epoch = entry.lock().leader_epoch;
        let failed = |err: SourceError| {
            tracing::debug!(mirror = %self.config.name, partition = %key, leader, "checking for a divergence before fetching failed: {err}");
            if let SourceError::Unreachable(_) = err {
                return BeforeFetch::LeaderUnreachable;
            }
            let other_epoch = matches!(
                err,
                SourceError::Kafka { code, .. }
                    if code == crate::partition::codes::FENCED_LEADER_EPOCH
                        || code == crate::partition::codes::UNKNOWN_LEADER_EPOCH
            );
            let mut e = entry.lock();
            // As after a fetch's error: no pause once a newer epoch is known.
            if e.source_leader == leader && e.leader_epoch <= current_leader_epoch {
                e.fetch_backoff_until = self.now().saturating_add(FETCH_ERROR_BACKOFF_MS);
            }
            if other_epoch {
                // The metadata may name a newer epoch (or the node may not lead at all).
                return BeforeFetch::LeaderUnreachable;
            }
            BeforeFetch::Wait
        };
        match self.source.fetch_reports_divergence(leader) {
            Ok(true) => return done(),
            Ok(false) => {}
            Err(err) => return failed(err),
        }
        let Some(mut asked) = dest.read().epoch_cache().latest_epoch() else {
            // No epoch to ask about: nothing copied that could diverge.
            return done();
        };
        // Each question is about an epoch below the one before, so a few settle it; what is
        // left is asked at the next round.
        for _ in 0..EPOCH_QUESTIONS_MAX {
            let answer = match self.source.end_offset_for_epoch(
                &key.topic,
                key.partition,
                asked,
                current_leader_epoch,
            ) {
                Ok(a) => a,
                Err(SourceError::Unsupported(why)) => {
                    // Kafka's follower falls back to its high watermark, which for the mirror
                    // (the destination's only replica) is its log end: a source log end below
                    // ours still shows as OFFSET_OUT_OF_RANGE.
                    tracing::warn!(mirror = %self.config.name, partition = %key, "the source can report no divergence (Fetch below v12) and cannot say where an epoch ends: {why}");
                    return done();
                }
                Err(err) => return failed(err),
            };
            let mut e = entry.lock();
            if !e.mirroring_at(state_epoch) {
                return BeforeFetch::Wait;
            }
            if answer.1.get() < 0 {
                // The source knows no such epoch (or no end for it): nothing to truncate to,
                // as Kafka's follower keeps its fetch offset then.
                e.truncating = false;
                return BeforeFetch::Fetch;
            }
            let (d, log_end) = {
                let log = dest.read();
                let leo = log.log_end_offset();
                (
                    truncation_for_leader_answer(answer.0, answer.1, log.epoch_cache(), leo, leo),
                    leo,
                )
            };
            if d.truncate_to < log_end {
                let changed = self.on_divergence(key, &mut e, dest, d.truncate_to, answer, log_end);
                drop(e);
                if changed {
                    self.topics_api.appended(std::slice::from_ref(key));
                }
                // Recovered: MIRRORING again, truncating, asked again at the next round.
                return BeforeFetch::Wait;
            }
            match d.next_epoch_to_query {
                Some(next) if !d.completed => asked = next,
                _ => {
                    e.truncating = false;
                    return BeforeFetch::Fetch;
                }
            }
        }
        BeforeFetch::Wait
    }

    /// Starts the fetcher pool loop (which starts and stops the fetchers,
    /// [`FETCHER_IDLE_MS`]) and the sync/drive thread, after
    /// [`open_stopped_topics`](Self::open_stopped_topics) (the broker runs its mirrors once all
    /// of them are restored).
    pub fn run(self: &Arc<Self>) {
        self.open_stopped_topics();
        let mut threads = self.threads.lock();
        let me = self.clone();
        threads.push(
            std::thread::Builder::new()
                .name(format!("mirror-{}-fetchers", self.config.name))
                .spawn(move || {
                    let interval = Duration::from_millis(me.config.pass_interval_ms);
                    while !me.stop.load(Ordering::Relaxed) {
                        me.run_fetcher_pool();
                        me.pool_wake.wait(interval);
                    }
                })
                .expect("spawn the fetcher pool thread"),
        );
        let me = self.clone();
        threads.push(
            std::thread::Builder::new()
                .name(format!("mirror-{}-sync", self.config.name))
                .spawn(move || {
                    let interval = Duration::from_millis(me.config.pass_interval_ms);
                    let mut last_sync = i64::MIN;
                    while !me.stop.load(Ordering::Relaxed) {
                        let now = me.now();
                        if now.saturating_sub(last_sync) >= me.config.metadata_refresh_interval_ms {
                            if let Err(e) = me.sync() {
                                tracing::warn!(mirror = %me.config.name, "metadata sync failed: {e}");
                            }
                            last_sync = now;
                        }
                        me.drive();
                        me.drive_wake.wait(interval);
                    }
                })
                .expect("spawn the sync thread"),
        );
    }

    /// One pass of the fetcher pool (Kafka's `addFetcherForPartitions` and
    /// `shutdownIdleFetcherThreads` in one): the fetcher (leader, fetcher index) of every
    /// MIRRORING partition with a source leader is started if it is not running (each fetcher
    /// finds its partitions in the map every round, so no partition list is handed over);
    /// a fetcher left without partitions for [`FETCHER_IDLE_MS`] is stopped. Partitions without
    /// a source leader have the source's leaders asked.
    fn run_fetcher_pool(self: &Arc<Self>) {
        let threads = self.config.fetcher_threads;
        // Without cloning the keys: this runs every 50 ms over every partition.
        let entries: Vec<(usize, EntryRef)> = self
            .partitions
            .lock()
            .iter()
            .map(|(k, v)| (fetcher_index(k, threads), v.clone()))
            .collect();
        let now = self.now();
        let mut wanted: BTreeSet<(i32, usize)> = BTreeSet::new();
        let mut leaderless: Vec<EntryRef> = vec![];
        for (index, entry) in entries {
            let e = entry.lock();
            if e.state.state != S::Mirroring {
                continue;
            }
            let (leader, backing_off) = (e.source_leader, now < e.fetch_backoff_until);
            drop(e);
            if leader < 0 {
                // The source's metadata named no leader (an election under way): ask it again
                // now, not at the next sync, as Kafka's consumer requests a metadata update for
                // a partition without one (rate-limited as any leader refresh).
                if !backing_off {
                    leaderless.push(entry);
                }
                continue;
            }
            wanted.insert((leader, index));
        }
        if !leaderless.is_empty() {
            let ptrs: std::collections::HashSet<*const Mutex<Entry>> =
                leaderless.iter().map(Arc::as_ptr).collect();
            let topics: BTreeSet<String> = self
                .partitions
                .lock()
                .iter()
                .filter(|(_, v)| ptrs.contains(&Arc::as_ptr(v)))
                .map(|(k, _)| k.topic.clone())
                .collect();
            self.refresh_leaders(&topics);
        }
        let mut guard = self.fetchers.lock();
        // Checked under the pool's lock, which `shutdown` takes after setting it: no fetcher
        // starts after `shutdown` has taken the pool.
        if self.stop.load(Ordering::Relaxed) {
            return;
        }
        let pool = &mut *guard;
        let (finished, retiring): (Vec<_>, Vec<_>) = std::mem::take(&mut pool.retiring)
            .into_iter()
            .partition(|(_, f)| f.finished());
        pool.retiring = retiring;
        for (_, f) in finished {
            f.join();
        }
        let mut idle = vec![];
        for (id, f) in pool.running.iter_mut() {
            match wanted.remove(id) {
                true => f.idle_since = None,
                false => {
                    let since = *f.idle_since.get_or_insert(now);
                    if now.saturating_sub(since) >= FETCHER_IDLE_MS {
                        idle.push(*id);
                    }
                }
            }
        }
        for id in idle {
            if let Some(f) = pool.running.remove(&id) {
                tracing::debug!(mirror = %self.config.name, source_node = id.0, fetcher = id.1, "stopping an idle fetcher");
                f.stop.store(true, Ordering::Relaxed);
                pool.retiring.push((id, f));
            }
        }
        for id in wanted {
            if pool.retiring.iter().any(|(r, _)| *r == id) {
                // Its earlier fetcher is still finishing a fetch: started at a later pass.
                continue;
            }
            match self.start_fetcher(id) {
                Ok(f) => {
                    pool.running.insert(id, f);
                }
                Err(e) => {
                    tracing::warn!(mirror = %self.config.name, source_node = id.0, fetcher = id.1, "cannot start a fetcher thread (tried again shortly): {e}");
                }
            }
        }
    }

    /// Starts fetcher `(source node, index)` of the pool (it finds its partitions in the map).
    fn start_fetcher(
        self: &Arc<Self>,
        (node, index): (i32, usize),
    ) -> std::io::Result<RunningFetcher> {
        // Pipelined: the fetcher asks for the next answers while its applier appends the
        // ones before (checking CRCs and writing the log took as long as the source's read
        // and the transfer, one after the other). Each request asks for at most what the
        // answers not applied yet leave of `response_max_bytes`, so a fetcher holds at most
        // that bound; when that is less than half of it, the fetcher waits for the applier
        // (many partitions filling whole responses: no overlap, full-size fetches).
        let (answers, applier_rx) =
            std::sync::mpsc::sync_channel::<FetchedAhead>(PIPELINED_ANSWERS_MAX);
        let mut fetcher = self.pipelined_fetcher_of(node, index);
        let shared = fetcher.shared.clone();
        let stop = Arc::new(AtomicBool::new(false));
        let response_max_bytes = self.config.response_max_bytes.max(1) as usize;
        let name = |role: &str| format!("mirror-{}-{role}-{node}-{index}", self.config.name);
        let me = self.clone();
        let applier = std::thread::Builder::new()
            .name(name("applier"))
            .spawn(move || {
                // Tells the fetcher the applier is gone, even on a panic.
                let _gone = AppliedAll(&shared);
                // Ends when the fetcher does (the channel closes).
                for got in applier_rx {
                    me.apply_fetched_ahead(&shared, got);
                }
            })?;
        let me = self.clone();
        let own_stop = stop.clone();
        // A spawn that fails drops `answers`: the applier ends.
        let fetcher_thread = std::thread::Builder::new()
            .name(name("fetcher"))
            .spawn(move || {
                let p = fetcher.shared.clone();
                let mut handed = 0u64;
                while !me.stop.load(Ordering::Relaxed) && !own_stop.load(Ordering::Relaxed) {
                    let budget = p.wait_budget(response_max_bytes, &own_stop);
                    let settle = || p.wait_applied(handed, &own_stop);
                    let got = me.fetch_ahead_settling(&mut fetcher, &settle, budget as i32);
                    let bytes = got.record_bytes();
                    if !got.0.is_empty() {
                        p.handed(bytes);
                        if answers.send(got).is_err() {
                            return;
                        }
                        handed += 1;
                    }
                    if bytes == 0 {
                        std::thread::sleep(Duration::from_millis(20));
                    }
                }
            });
        let fetcher_thread = match fetcher_thread {
            Ok(t) => t,
            Err(e) => {
                let _ = applier.join();
                return Err(e);
            }
        };
        Ok(RunningFetcher {
            stop,
            idle_since: None,
            threads: vec![fetcher_thread, applier],
        })
    }

    /// Stops the threads (the partitions keep their states).
    pub fn shutdown(&self) {
        self.stop.store(true, Ordering::Relaxed);
        self.drive_wake.notify();
        self.pool_wake.notify();
        let pool = std::mem::take(&mut *self.fetchers.lock());
        let fetchers: Vec<RunningFetcher> = pool
            .running
            .into_values()
            .chain(pool.retiring.into_iter().map(|(_, f)| f))
            .collect();
        for f in &fetchers {
            f.stop.store(true, Ordering::Relaxed);
        }
        for t in self.threads.lock().drain(..) {
            let _ = t.join();
        }
        for f in fetchers {
            f.join();
        }
    }

    fn topic_entries(&self, topic: &str) -> Result<Vec<(TopicPartition, EntryRef)>, MirrorError> {
        let v: Vec<_> = self
            .partitions
            .lock()
            .iter()
            .filter(|(k, _)| k.topic == topic)
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        if v.is_empty() {
            return Err(MirrorError::Invalid(format!(
                "topic {topic} is not mirrored by {}",
                self.config.name
            )));
        }
        Ok(v)
    }

    /// Failover: for each partition of `topic`, STOPPING (persisted, fetches dropped), the stop
    /// sequence ([`stop_partition`](crate::partition::stop_partition): epoch bump, ABORT markers, MIRROR_PID_RESET), the last
    /// mirror epoch recorded, STOPPED; then the topic is writable.
    ///
    /// # Errors
    /// Unknown topic, or a partition whose stop failed (it stays read-only, FAILED).
    pub fn stop_topic(&self, topic: &str) -> Result<(), MirrorError> {
        // Serialised with starts and partition growth: a partition the sync starts while the
        // stop works through the others would be left mirroring in a topic failed over.
        let _serial = self.starting.lock();
        self.stop_topic_serialised(topic)
    }

    /// [`stop_topic`](Self::stop_topic); the caller holds `starting`.
    fn stop_topic_serialised(&self, topic: &str) -> Result<(), MirrorError> {
        let entries = self.topic_entries_to_change(topic)?;
        // A stop ends a pause (it runs from PAUSED too, KIP-1279 §3.2).
        self.paused_topics.lock().remove(topic);
        if !self.owns(topic) {
            return self.stop_unowned(topic, entries);
        }
        for (key, entry) in entries {
            let mut e = entry.lock();
            match e.state.state {
                S::Stopped => continue,
                // An interrupted stop (a crash, or a failure then a retry or recover): its last
                // mirror epoch was recorded when it entered STOPPING.
                S::Stopping => {}
                // A failed stop being stopped again: its STOPPING recorded the last mirror
                // epoch before the first attempt assigned the stop's own epoch, which the log
                // would now answer.
                S::Failed
                    if e.state.failure.as_ref().map(|f| f.previous_state) == Some(S::Stopping) =>
                {
                    self.move_to(&mut e, S::Stopping)?;
                }
                _ => {
                    // Recorded with STOPPING, before the sequence writes anything, so a re-run
                    // after a crash knows what was mirrored. Without a mirror log (the client
                    // deleted the mirror topic) nothing was.
                    e.state.last_mirror_epoch = self
                        .mirror_destination(&key)
                        .map_or(LeaderEpoch::NONE, |dest| last_mirrored_epoch(&dest));
                    self.move_to(&mut e, S::Stopping)?;
                }
            }
            self.finish_stop(&key, &mut e)?;
        }
        self.open_if_stopped(topic)?;
        // A stop ends whatever start was left (its undo not recorded): nothing to put back.
        if let Err(e) = self.forget_start_intent(topic) {
            tracing::warn!(mirror = %self.config.name, topic, "the start intent left by an earlier start could not be deleted: {e}");
        }
        Ok(())
    }

    /// Deletes the start intent an earlier start of `topic` left (its undo could not be
    /// recorded), if there is one.
    fn forget_start_intent(&self, topic: &str) -> Result<(), MirrorError> {
        let Some(id) = self.topics.lock().get(topic).map(|t| t.id) else {
            return Ok(());
        };
        if self.store.start_intent(&self.config.name, id).is_some() {
            let key = StartIntent::key_of(&self.config.name, id);
            self.store.delete_start_intent(&key)?;
        }
        Ok(())
    }

    /// Stops this mirror's partitions of a topic it does not own (another mirror writes it, or
    /// nobody mirrors it now): states only, STOPPING then STOPPED. The stop sequence (epoch
    /// bump, ABORT markers, MIRROR_PID_RESET) and making the topic writable are the owner's;
    /// done here they would write a log another mirror is filling, or that local producers own.
    fn stop_unowned(
        &self,
        topic: &str,
        entries: Vec<(TopicPartition, EntryRef)>,
    ) -> Result<(), MirrorError> {
        for (key, entry) in entries {
            let mut e = entry.lock();
            if e.state.state == S::Stopped {
                continue;
            }
            if e.state.state != S::Stopping {
                self.move_to(&mut e, S::Stopping)?;
            }
            self.move_to(&mut e, S::Stopped)?;
            tracing::info!(mirror = %self.config.name, partition = %key, "stopped a partition of a topic another mirror owns (state only: its log is not this mirror's)");
        }
        tracing::debug!(mirror = %self.config.name, topic, "topic stopped without the stop sequence");
        Ok(())
    }

    fn dest_log(&self, key: &TopicPartition) -> Result<Arc<PartitionHandle>, MirrorError> {
        self.logs
            .get(key)
            .ok_or_else(|| MirrorError::Invalid(format!("{key} has no destination log")))
    }

    /// Runs the stop sequence for a partition in STOPPING with the last mirror epoch its state
    /// recorded, then STOPPED. A failure moves it to FAILED (retryable: the retry comes back to
    /// STOPPING and [`drive`](Self::drive) finishes the stop).
    fn finish_stop(&self, key: &TopicPartition, e: &mut Entry) -> Result<(), MirrorError> {
        debug_assert_eq!(e.state.state, S::Stopping);
        // The stop sequence writes the mirror's own log only, which stays read-only until every
        // partition of the topic is STOPPED (as `mirror_destination` finds it for the data
        // path). A log that is gone, or writable, is not the mirror's any more: a client deleted
        // the mirror topic (and may have created an ordinary topic under its name, whose
        // records, epoch and producers the sequence must never touch). Nothing is left to stop
        // there; the partition is STOPPED, so the topic's claim can go (else the topic stayed
        // claimed, and the mirror undeletable, for ever).
        let Some(dest) = self.mirror_destination(key) else {
            tracing::warn!(mirror = %self.config.name, partition = %key, "the destination partition is no longer this mirror's (deleted on the destination): stopped without the stop sequence");
            if let Err(err) = self.move_to(e, S::Stopped) {
                self.fail(
                    key,
                    e,
                    &format!("recording STOPPED failed: {}", ErrorChain(&err)),
                    true,
                );
                return Err(err);
            }
            return Ok(());
        };
        let cluster = self.source_cluster_id.lock().clone().unwrap_or_default();
        let r = stop_partition_after(&dest, e.state.last_mirror_epoch, &cluster, self.now())
            .map_err(MirrorError::from);
        match r {
            Ok(report) => {
                e.state.destination_leader_epoch = report.new_leader_epoch;
                if let Err(err) = self.move_to(e, S::Stopped) {
                    // Writable only once STOPPED is persisted: read-only again, FAILED (its
                    // retry comes back to STOPPING, and the re-run only finishes the stop: the
                    // barrier is written once).
                    if let Ok(dest) = self.dest_log(key) {
                        dest.write().set_read_only(true);
                    }
                    self.fail(
                        key,
                        e,
                        &format!("recording STOPPED failed: {}", ErrorChain(&err)),
                        true,
                    );
                    return Err(err);
                }
                Ok(())
            }
            Err(err) => {
                self.fail(key, e, &format!("stop failed: {}", ErrorChain(&err)), true);
                Err(err)
            }
        }
    }

    /// Finishes the failover of each topic every partition of which is STOPPED here while its
    /// destination topic is still read-only and no mirror holds it: the stop's last step
    /// (`open_if_stopped`) stores the topic writable after the last
    /// STOPPED is persisted, so a crash in between left it read-only, and nothing would ever
    /// open it (a restore claims only topics with a partition not STOPPED, and a stop of a
    /// STOPPED topic changes nothing). Called by [`run`](Self::run), once every mirror of the
    /// broker has been restored and has claimed the topics it mirrors, so a topic another
    /// mirror writes now is never opened; the claim is taken for the change, as a stop holds
    /// it.
    pub fn open_stopped_topics(&self) {
        for topic in self.topic_names() {
            let _claiming = self.claim_lock.lock();
            let Ok(entries) = self.topic_entries(&topic) else {
                continue;
            };
            let read_only = entries
                .iter()
                .any(|(key, _)| self.logs.get(key).is_some_and(|h| h.read().is_read_only()));
            if !read_only
                || self.claims.owner(&topic).is_some()
                || !entries
                    .iter()
                    .all(|(_, e)| e.lock().state.state == S::Stopped)
                || self.claims.claim(&topic, &self.config.name).is_err()
            {
                continue;
            }
            match self.topics_api.set_read_only(&topic, false) {
                Ok(()) => {
                    tracing::info!(mirror = %self.config.name, topic, "made a stopped topic writable: a crash had cut its failover short");
                }
                Err(err) => {
                    tracing::warn!(mirror = %self.config.name, topic, "making a stopped topic writable failed: {err}");
                }
            }
            self.claims.release(&topic, &self.config.name);
        }
    }

    /// Makes `topic` writable once every one of its mirrored partitions is STOPPED, then
    /// releases this mirror's claim on it (in that order: a mirror that takes it next finds it
    /// writable and makes it read-only again, never the other way round). Only the owner opens
    /// a topic.
    fn open_if_stopped(&self, topic: &str) -> Result<(), MirrorError> {
        let _claiming = self.claim_lock.lock();
        let all_stopped = self
            .topic_entries(topic)?
            .iter()
            .all(|(_, e)| e.lock().state.state == S::Stopped);
        if all_stopped && self.owns(topic) {
            // A topic a client deleted has nothing to open (the broker refuses an unknown
            // topic, which kept the claim for ever). (The stop sequence already made each log
            // writable in memory; this stores it.)
            let exists = self
                .topic_entries(topic)?
                .iter()
                .any(|(key, _)| self.logs.get(key).is_some());
            if exists {
                self.topics_api
                    .set_read_only(topic, false)
                    .map_err(MirrorError::Invalid)?;
            }
            self.claims.release(topic, &self.config.name);
        }
        Ok(())
    }

    /// A partition that failed while paused comes back through MIRRORING (FAILED → PAUSED is not
    /// a transition) and is paused again at once, under its entry's lock, so nothing fetches it
    /// in between and the operator's pause is kept; so is one of a paused topic that has just
    /// become MIRRORING ([`MirrorManager::paused_topics`]).
    fn pause_again(&self, key: &TopicPartition, e: &mut Entry, was_paused: bool) {
        if (was_paused || self.paused_topics.lock().contains(&key.topic))
            && e.state.state == S::Mirroring
            && let Err(err) = self
                .move_to(e, S::Pausing)
                .and_then(|()| self.move_to(e, S::Paused))
        {
            tracing::warn!(mirror = %self.config.name, partition = %key, "pausing again after the retry failed: {err}");
        }
    }

    /// Pause: MIRRORING → PAUSING → PAUSED (no fetching; still read-only). The pause is the
    /// topic's: a partition still in LOG_ALIGNMENT (from which PAUSING is not a transition), or
    /// one the source adds later, is paused as soon as its alignment is done, before anything
    /// fetches it. A topic none of whose partitions has finished its alignment is refused (its
    /// partitions' states are what keeps a pause over a restart), and so is one with a partition
    /// in any other state; either way nothing changes.
    ///
    /// # Errors
    /// Unknown topic, or a partition in a state that cannot pause.
    pub fn pause_topic(&self, topic: &str) -> Result<(), MirrorError> {
        let entries = self.topic_entries_to_change(topic)?;
        let states: Vec<S> = entries.iter().map(|(_, e)| e.lock().state.state).collect();
        if let Some(((key, _), state)) = entries
            .iter()
            .zip(&states)
            .find(|(_, s)| !matches!(s, S::Mirroring | S::Pausing | S::Paused | S::LogAlignment))
        {
            return Err(MirrorError::Invalid(format!(
                "partition {key} is {state}: it cannot be paused"
            )));
        }
        if !states
            .iter()
            .any(|s| matches!(s, S::Mirroring | S::Pausing | S::Paused))
        {
            return Err(MirrorError::Invalid(format!(
                "no partition of topic {topic} has finished LOG_ALIGNMENT yet: pause it once \
                 one is MIRRORING"
            )));
        }
        // Before any partition moves: one that finishes its alignment from now on finds it.
        self.paused_topics.lock().insert(topic.to_string());
        for (_, entry) in entries {
            let mut e = entry.lock();
            if matches!(e.state.state, S::Paused | S::LogAlignment) {
                continue;
            }
            self.move_to(&mut e, S::Pausing)?;
            self.move_to(&mut e, S::Paused)?;
        }
        Ok(())
    }

    /// Resume: PAUSED → MIRRORING from the local log end, no truncation. Only PAUSING/PAUSED
    /// partitions move; the others are left alone (the table also allows LOG_ALIGNMENT →
    /// MIRRORING and FAILED → MIRRORING, but resuming those would skip the alignment's
    /// truncation or a failure's recovery).
    ///
    /// # Errors
    /// Unknown topic, or the state cannot be persisted.
    pub fn resume_topic(&self, topic: &str) -> Result<(), MirrorError> {
        let entries = self.topic_entries_to_change(topic)?;
        self.paused_topics.lock().remove(topic);
        for (key, entry) in entries {
            let mut e = entry.lock();
            if !matches!(e.state.state, S::Paused | S::Pausing) {
                continue;
            }
            self.move_to(&mut e, S::Mirroring)?;
            self.ensure_leader_epoch(&key, &mut e);
        }
        Ok(())
    }

    /// Every mirrored partition's status.
    pub fn describe(&self) -> Vec<PartitionStatus> {
        let entries: Vec<_> = self
            .partitions
            .lock()
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        entries
            .into_iter()
            .map(|(key, entry)| {
                let e = entry.lock();
                let (leo, open_transactions) =
                    self.logs.get(&key).map_or((Offset(-1), vec![]), |h| {
                        let log = h.read();
                        let open = log
                            .producer_state()
                            .producers()
                            .filter_map(|p| {
                                p.current_txn_first_offset
                                    .map(|o| (p.producer_id, p.producer_epoch, o))
                            })
                            .collect();
                        (log.log_end_offset(), open)
                    });
                let lag = if e.source_hw.get() >= 0 {
                    (e.source_hw.get() - leo.get()).max(0)
                } else {
                    0
                };
                let retry_attempt = match &e.state.failure {
                    None => 0,
                    Some(f) if f.retryable => f.attempt,
                    Some(_) => -1,
                };
                PartitionStatus {
                    topic: key.topic.clone(),
                    partition: key.partition,
                    state: e.state.state,
                    state_epoch: e.state.state_epoch,
                    source_high_watermark: e.source_hw,
                    log_end_offset: leo,
                    lag,
                    last_mirror_epoch: e.state.last_mirror_epoch,
                    last_mirror_offset: self.last_mirror_offset(&key, e.state.last_mirror_epoch),
                    failure: e
                        .state
                        .failure
                        .as_ref()
                        .filter(|_| e.state.state == S::Failed)
                        .map(|f| f.reason.clone()),
                    retry_attempt,
                    topic_id: e.state.topic_id,
                    destination_leader_epoch: e.state.destination_leader_epoch,
                    previous_state: e.state.failure.as_ref().map(|f| f.previous_state),
                    open_transactions,
                }
            })
            .collect()
    }
}

fn stable_hash(tp: &TopicPartition) -> u64 {
    tp.topic
        .bytes()
        .chain(tp.partition.to_be_bytes())
        .fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
        })
}

/// Whether a FAILED partition failed while paused (or pausing).
fn was_paused(st: &PartitionMirrorState) -> bool {
    st.state == S::Failed
        && st
            .failure
            .as_ref()
            .is_some_and(|f| matches!(f.previous_state, S::Paused | S::Pausing))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Destination topics straight on a log manager, created read-only.
    #[derive(Debug)]
    struct Topics(Arc<LogManager>);

    impl DestinationTopics for Topics {
        fn ensure_mirror_topic(&self, name: &str, id: [u8; 16], n: i32) -> Result<(), String> {
            for p in 0..n {
                if self.0.get(&tp(name, p)).is_none() {
                    let cfg = mirrorlog_engine::config::LogConfig {
                        read_only: true,
                        ..Default::default()
                    };
                    self.0
                        .create(&tp(name, p), mirrorlog_index::TopicId(id), cfg)
                        .map_err(|e| e.to_string())?;
                }
            }
            Ok(())
        }
        fn topic_name_for_id(&self, _id: [u8; 16]) -> Option<String> {
            None
        }
        fn apply_topic_configs(
            &self,
            _: &str,
            _: &[(String, String)],
            _: &[String],
        ) -> Result<(), String> {
            Ok(())
        }
        fn set_read_only(&self, _: &str, _: bool) -> Result<(), String> {
            Ok(())
        }
    }

    /// A FAILED reason names the operating system's error of an index file's failed call (a
    /// full disk refusing the `fallocate` that reserves a new segment's index blocks read only
    /// "I/O error during fallocate of …"), through every wrapper, and does not repeat a cause
    /// the message already shows (a log write's error names it itself).
    #[test]
    fn a_failure_reason_names_the_cause_of_an_index_write() {
        // ENOSPC on Linux.
        let enospc = || std::io::Error::from_raw_os_error(28);
        let index = MirrorError::State(StateError::Engine(EngineError::Index(
            mirrorlog_index::Error::Io {
                op: "fallocate",
                path: "/d/events-0/00000000000000007056.timeindex".into(),
                source: enospc(),
            },
        )));
        assert_eq!(
            ErrorChain(&index).to_string(),
            "I/O error during fallocate of /d/events-0/00000000000000007056.timeindex: No space \
             left on device (os error 28)"
        );
        let log = EngineError::Segment(mirrorlog_segment::segment::SegmentError::Io(
            mirrorlog_segment::io::IoError::new(
                mirrorlog_segment::io::IoOp::WriteAt,
                "/d/events-0/00000000000000007056.log",
                enospc(),
            ),
        ));
        assert_eq!(ErrorChain(&log).to_string(), log.to_string());
        assert!(
            log.to_string()
                .ends_with("No space left on device (os error 28)")
        );
    }

    /// `drive` aligns no partition of a topic a start is still moving (so a start that fails
    /// part-way can put back every partition it moved, none of them truncated), and aligns it
    /// once the start is over.
    #[test]
    fn drive_leaves_a_topic_being_started_alone() {
        let dirs = [
            tempfile::tempdir().unwrap(),
            tempfile::tempdir().unwrap(),
            tempfile::tempdir().unwrap(),
        ];
        let logs = |d: &tempfile::TempDir| {
            let (m, _) = LogManager::open(
                mirrorlog_engine::manager::LogManagerConfig::new(d.path()),
                Arc::new(mirrorlog_segment::io::PwriteStorage::new()),
                mirrorlog_engine::clock::ManualClock::new(0),
            )
            .unwrap();
            Arc::new(m)
        };
        let (src, dst, state) = (logs(&dirs[0]), logs(&dirs[1]), logs(&dirs[2]));
        src.create(
            &tp("orders", 0),
            mirrorlog_index::TopicId([7; 16]),
            Default::default(),
        )
        .unwrap();
        let m = MirrorManager::new(
            MirrorConfig::new("m"),
            crate::engine_source::EngineSource::new(src, "source", 1),
            dst.clone(),
            Arc::new(Topics(dst)),
            Arc::new(MirrorStateStore::open(state, 1).unwrap()),
            mirrorlog_engine::clock::ManualClock::new(0),
        )
        .unwrap();
        m.start_topics(&["orders".into()]).unwrap();
        assert_eq!(m.topic_states("orders"), vec![S::LogAlignment]);
        {
            let _in_progress = StartInProgress::new(&m.starting_topic, "orders");
            m.drive();
            assert_eq!(m.topic_states("orders"), vec![S::LogAlignment]);
        }
        m.drive();
        assert_eq!(m.topic_states("orders"), vec![S::Mirroring]);
    }

    /// Every out-of-range mirror setting is refused with a message naming its key (the
    /// CreateClusterMirror answer is all the operator sees); `fetch.wait.max.ms` was reported
    /// as "fetch max wait".
    #[test]
    fn out_of_range_mirror_settings_are_refused_by_key() {
        for (key, value) in [
            ("mirror.num.replica.fetchers", "0"),
            ("fetch.response.max.bytes", "1023"),
            ("fetch.max.bytes", "1023"),
            ("fetch.wait.max.ms", "30001"),
            ("fetch.wait.max.ms", "-1"),
            ("mirror.metadata.refresh.interval.ms", "99"),
            ("mirror.failed.retry.initial.backoff.ms", "-1"),
            ("mirror.failed.retry.max.attempts", "-1"),
            ("mirror.topics.include", "("),
        ] {
            let mut c = MirrorConfig::new("m");
            assert_eq!(c.set(key, value), Ok(true), "{key}={value}");
            let Err(e) = c.validate() else {
                panic!("{key}={value} accepted");
            };
            assert!(e.contains(key), "{key}={value}: {e}");
        }
    }

    #[test]
    fn a_pipelined_fetcher_asks_only_for_what_unapplied_answers_leave_of_the_response_bound() {
        let p = Arc::new(Pipeline::default());
        let stop = AtomicBool::new(false);
        let max = 16 << 20;
        assert_eq!(p.wait_budget(max, &stop), max);
        p.handed(1 << 20);
        p.handed(1 << 20);
        assert_eq!(p.wait_budget(max, &stop), max - (2 << 20));
        // Past half the bound, the fetcher waits for the applier.
        p.handed(10 << 20);
        let applier = {
            let p = p.clone();
            std::thread::spawn(move || {
                p.applied_one(1 << 20);
                p.applied_one(1 << 20);
                p.applied_one(10 << 20);
            })
        };
        assert_eq!(
            p.wait_budget(max, &stop),
            max,
            "returns once all is applied"
        );
        applier.join().unwrap();
        p.wait_applied(3, &stop);
        // A gone applier leaves nothing to wait for.
        p.handed(max);
        drop(AppliedAll(&p));
        assert_eq!(p.wait_budget(max, &stop), max);
        p.wait_applied(u64::MAX - 1, &stop);
    }

    #[test]
    fn settings_parse_by_their_kip_names_and_entries_round_trip() {
        let mut c = MirrorConfig::new("m");
        assert!(c.set("mirror.num.replica.fetchers", "3").unwrap());
        assert!(
            c.set("mirror.topics.include", "orders.*, pay(ments|outs)")
                .unwrap()
        );
        assert!(
            c.set("mirror.support.unclean.leader.election", "true")
                .unwrap()
        );
        assert!(!c.set("bootstrap.servers", "x:1").unwrap());
        c.validate().unwrap();
        assert!(c.support_unclean_leader_election);
        assert_eq!(c.fetcher_threads, 3);
        assert_eq!(c.topics_include, vec!["orders.*", "pay(ments|outs)"]);
        let mut back = MirrorConfig::new("m");
        for (k, v) in c.entries() {
            assert!(back.set(&k, &v).unwrap(), "{k}");
        }
        assert_eq!(back.entries(), c.entries());
    }

    /// The prototype defines its settings with Kafka's `ConfigDef`, whose BOOLEAN takes `true`
    /// and `false` in any case; `--config mirror.support.unclean.leader.election=TRUE` was
    /// refused here.
    #[test]
    fn a_boolean_setting_takes_true_and_false_in_any_case() {
        let mut c = MirrorConfig::new("m");
        c.set("mirror.support.unclean.leader.election", " TRUE")
            .unwrap();
        assert!(c.support_unclean_leader_election);
        c.set("mirror.support.unclean.leader.election", "False")
            .unwrap();
        assert!(!c.support_unclean_leader_election);
    }

    #[test]
    fn bad_settings_are_refused_naming_the_key() {
        let mut c = MirrorConfig::new("m");
        let e = c.set("mirror.num.replica.fetchers", "many").unwrap_err();
        assert!(e.contains("mirror.num.replica.fetchers"), "{e}");
        let e = c
            .set("mirror.support.unclean.leader.election", "yes")
            .unwrap_err();
        assert!(e.contains("not true or false"), "{e}");
        c.set("mirror.topics.exclude", "(unclosed").unwrap();
        let e = c.validate().unwrap_err();
        assert!(e.contains("mirror.topics.exclude"), "{e}");
        let mut c = MirrorConfig::new("m");
        c.set("mirror.metadata.refresh.interval.ms", "10").unwrap();
        assert!(c.validate().unwrap_err().contains("100..=3600000"));
    }

    #[test]
    fn patterns_match_whole_names_and_the_default_excludes_internal_topics() {
        let re = compile_patterns("p", &["orders".into()]).unwrap();
        assert!(re[0].is_match("orders"));
        assert!(!re[0].is_match("orders-eu"));
        let c = MirrorConfig::new("m");
        let ex = compile_patterns("e", &c.topics_exclude).unwrap();
        assert!(ex.iter().any(|r| r.is_match("__consumer_offsets")));
        assert!(!ex.iter().any(|r| r.is_match("orders")));
        let props = compile_patterns("x", &c.topic_properties_exclude).unwrap();
        assert!(props.iter().any(|r| r.is_match("min.insync.replicas")));
        assert!(!props.iter().any(|r| r.is_match("retention.ms")));
    }
}
