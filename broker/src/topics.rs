//! The topic registry: names, ids, partition counts and configs of the topics this broker holds.
//!
//! There is no separate metadata log: a topic is its partition directories. On start the registry
//! is rebuilt from the log manager's partitions (`partition.metadata` carries the topic id,
//! `topic.config` the overrides); creating, growing and deleting topics go through the log
//! manager, so what the registry says and what is on disk cannot drift apart.

use kafka_protocol::ResponseError;
use kafka_protocol::protocol::StrBytes;
use mirrorlog_engine::config::LogConfig;
use mirrorlog_engine::manager::LogManager;
use mirrorlog_index::{ErrorChain, TopicId, TopicPartition};
use parking_lot::{Mutex, MutexGuard, RwLock};
use std::collections::{BTreeMap, HashSet};
use uuid::Uuid;

/// Internal topics: Kafka's two and the mirrors' state (KIP-1279). Clients cannot create,
/// delete, grow, produce to or trim them; their owners (coordinators, the mirror state store)
/// depend on their partition counts, topic ids and records.
pub const INTERNAL_TOPICS: [&str; 3] = [
    "__consumer_offsets",
    "__transaction_state",
    mirrorlog_mirror::state::MIRROR_STATE_TOPIC,
];

/// One topic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicMeta {
    /// The topic name.
    pub name: String,
    /// The topic id.
    pub id: Uuid,
    /// Partitions 0..count.
    pub partitions: i32,
    /// An internal topic ([`INTERNAL_TOPICS`]).
    pub internal: bool,
}

/// A failed topic operation: the Kafka error and a message for the response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicError {
    /// Kafka error code.
    pub code: i16,
    /// Human message.
    pub message: String,
}

impl TopicError {
    /// A per-resource outcome as a response's `(error_code, error_message)`: `(0, None)` for
    /// success.
    pub fn response_fields(outcome: Result<(), TopicError>) -> (i16, Option<StrBytes>) {
        match outcome {
            Ok(()) => (0, None),
            Err(e) => (e.code, Some(sb(&e.message))),
        }
    }

    fn new(e: ResponseError, message: impl Into<String>) -> TopicError {
        TopicError {
            code: e.code(),
            message: message.into(),
        }
    }
}

/// Converts a topic id between the wire (`Uuid`) and disk (`TopicId`) forms.
pub fn topic_id_to_uuid(id: TopicId) -> Uuid {
    Uuid::from_bytes(id.0)
}

/// See [`topic_id_to_uuid`].
pub fn uuid_to_topic_id(id: Uuid) -> TopicId {
    TopicId(*id.as_bytes())
}

/// The first of `existing` that `name` collides with once '.' and '_' are alike (Kafka's
/// `Topic.hasCollision`), leaving out the topics of `same_request`.
pub fn colliding<'a>(
    name: &str,
    existing: impl IntoIterator<Item = &'a String>,
    same_request: &HashSet<String>,
) -> Option<&'a String> {
    let norm = |s: &str| s.replace('.', "_");
    existing
        .into_iter()
        .find(|t| !same_request.contains(*t) && norm(t) == norm(name))
}

/// Kafka's topic-name rules (`Topic.validate`): 1..=249 characters of `[a-zA-Z0-9._-]`, not `.`
/// or `..`.
pub fn validate_topic_name(name: &str) -> Result<(), TopicError> {
    let bad = |m: String| Err(TopicError::new(ResponseError::InvalidTopicException, m));
    if name.is_empty() {
        return bad("topic name is empty".into());
    }
    if name == "." || name == ".." {
        return bad(format!("topic name cannot be {name:?}"));
    }
    if name.len() > 249 {
        return bad(format!(
            "topic name is {} characters; at most 249",
            name.len()
        ));
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || "._-".contains(*c)))
    {
        return bad(format!(
            "topic name {name:?} has illegal character {c:?}; legal: a-z A-Z 0-9 . _ -"
        ));
    }
    Ok(())
}

/// The config of topic `name` (partitions `0..partitions`): every partition holds it
/// (`topic.config`), so the first loaded one gives it — partition 0 may be in a data directory
/// offline since start. `None` when no partition of the topic is loaded.
pub fn topic_log_config(logs: &LogManager, name: &str, partitions: i32) -> Option<LogConfig> {
    (0..partitions).find_map(|p| {
        logs.get(&TopicPartition {
            topic: name.to_string(),
            partition: p,
        })
        .map(|h| h.read().config().clone())
    })
}

/// KAFKA_STORAGE_ERROR naming the first partition of topic `name` (`0..partitions`) in an
/// offline data directory, if any: what a change to every partition of a topic (`what`:
/// "delete", "change the config of") checks before it writes one, so that it is made to all or
/// to none (an offline partition's files cannot be written or removed).
pub fn check_no_partition_offline(
    logs: &LogManager,
    name: &str,
    partitions: i32,
    what: &str,
) -> Result<(), TopicError> {
    for p in 0..partitions {
        let tp = TopicPartition {
            topic: name.to_string(),
            partition: p,
        };
        if let Err(e) = logs.lookup(&tp) {
            return Err(TopicError::new(
                ResponseError::KafkaStorageError,
                format!(
                    "cannot {what} topic {name}: partition {tp}: {}",
                    ErrorChain(&e)
                ),
            ));
        }
    }
    Ok(())
}

/// The registry. See the module docs.
#[derive(Debug, Default)]
pub struct TopicRegistry {
    topics: RwLock<BTreeMap<String, TopicMeta>>,
    /// Serialises topic config changes, each a read of the current config, a change and a
    /// write to every partition (see [`TopicRegistry::config_change_lock`]).
    config_changes: Mutex<()>,
}

impl TopicRegistry {
    /// Rebuilds the registry from the partitions the log manager opened.
    pub fn load(logs: &LogManager) -> TopicRegistry {
        let mut topics: BTreeMap<String, TopicMeta> = BTreeMap::new();
        for h in logs.partitions() {
            let tp = h.topic_partition();
            let e = topics.entry(tp.topic.clone()).or_insert_with(|| TopicMeta {
                name: tp.topic.clone(),
                id: topic_id_to_uuid(h.topic_id()),
                partitions: 0,
                internal: INTERNAL_TOPICS.contains(&tp.topic.as_str()),
            });
            e.partitions = e.partitions.max(tp.partition + 1);
        }
        // A partition in a data directory offline since start is still the topic's (Kafka's
        // metadata keeps it, answered offline): the count must not shrink below it, or Metadata
        // would hide it and CreatePartitions would try to create it again. A topic none of
        // whose partitions loaded is left out (its topic id cannot be read).
        for (tp, _) in logs.offline_partitions() {
            if let Some(e) = topics.get_mut(&tp.topic) {
                e.partitions = e.partitions.max(tp.partition + 1);
            }
        }
        TopicRegistry {
            topics: RwLock::new(topics),
            config_changes: Mutex::new(()),
        }
    }

    /// Rebuilds from the log manager (after coordinators created their internal topics).
    pub fn refresh(&self, logs: &LogManager) {
        // The snapshot is taken under the registry's lock: a create, growth or delete (which
        // hold it while they change the log manager) is either wholly in it or wholly after it,
        // never overwritten by a view taken half-way through.
        let mut topics = self.topics.write();
        *topics = TopicRegistry::load(logs).topics.into_inner();
    }

    /// Held across reading a topic's config, changing it and storing it for every partition
    /// (IncrementalAlterConfigs, a mirror's config sync), so that concurrent changes to
    /// different keys do not overwrite each other with the config they read.
    pub fn config_change_lock(&self) -> MutexGuard<'_, ()> {
        self.config_changes.lock()
    }

    /// A topic by name.
    pub fn get(&self, name: &str) -> Option<TopicMeta> {
        self.topics.read().get(name).cloned()
    }

    /// [`get`](Self::get) unless the registry is locked (a creation or deletion under way):
    /// `None` then. For tests that look from inside a deletion.
    #[cfg(test)]
    pub(crate) fn try_get(&self, name: &str) -> Option<Option<TopicMeta>> {
        self.topics.try_read().map(|t| t.get(name).cloned())
    }

    /// A topic by id.
    pub fn by_id(&self, id: Uuid) -> Option<TopicMeta> {
        self.topics.read().values().find(|t| t.id == id).cloned()
    }

    /// Every topic, by name.
    pub fn all(&self) -> Vec<TopicMeta> {
        self.topics.read().values().cloned().collect()
    }

    /// Creates a topic with `partitions` partitions and `config`, or fails as Kafka's
    /// CreateTopics does (TOPIC_ALREADY_EXISTS, INVALID_TOPIC_EXCEPTION, INVALID_PARTITIONS).
    /// `id` fixes the topic id (internal topics, mirrors); `None` draws a random one.
    pub fn create(
        &self,
        logs: &LogManager,
        name: &str,
        partitions: i32,
        config: LogConfig,
        id: Option<Uuid>,
    ) -> Result<TopicMeta, TopicError> {
        self.create_beside(logs, name, partitions, config, id, &HashSet::new())
    }

    /// [`create`](Self::create) for one topic of a CreateTopics request: its name may collide
    /// with `same_request`, the topics the request created before it, as Kafka's controller
    /// checks collisions only against the topics that existed before the request.
    pub fn create_beside(
        &self,
        logs: &LogManager,
        name: &str,
        partitions: i32,
        config: LogConfig,
        id: Option<Uuid>,
        same_request: &HashSet<String>,
    ) -> Result<TopicMeta, TopicError> {
        validate_topic_name(name)?;
        if partitions < 1 {
            return Err(TopicError::new(
                ResponseError::InvalidPartitions,
                format!("{partitions} partitions; at least 1"),
            ));
        }
        let mut topics = self.topics.write();
        if topics.contains_key(name) {
            return Err(TopicError::new(
                ResponseError::TopicAlreadyExists,
                format!("topic {name} already exists"),
            ));
        }
        // Kafka forbids names that collide once '.' and '_' are treated alike (metric names).
        if let Some(other) = colliding(name, topics.keys(), same_request) {
            return Err(TopicError::new(
                ResponseError::InvalidTopicException,
                format!(
                    "topic {name} collides with existing topic {other} ('.' and '_' are alike)"
                ),
            ));
        }
        let id = id.unwrap_or_else(Uuid::new_v4);
        for p in 0..partitions {
            let tp = TopicPartition {
                topic: name.to_string(),
                partition: p,
            };
            if let Err(e) = logs.create(&tp, uuid_to_topic_id(id), config.clone()) {
                // All or nothing: the partitions created so far go again, or the log manager
                // (and the disk, at the next start) would hold a topic the registry does not.
                for q in 0..p {
                    let tp = TopicPartition {
                        topic: name.to_string(),
                        partition: q,
                    };
                    if let Err(e) = logs.delete(&tp) {
                        tracing::error!(partition = %tp, "undoing a failed topic creation: {}", ErrorChain(&e));
                    }
                }
                return Err(TopicError::new(
                    ResponseError::KafkaStorageError,
                    ErrorChain(&e).to_string(),
                ));
            }
        }
        let meta = TopicMeta {
            name: name.into(),
            id,
            partitions,
            internal: INTERNAL_TOPICS.contains(&name),
        };
        topics.insert(name.into(), meta.clone());
        Ok(meta)
    }

    /// Grows a topic to `total` partitions (CreatePartitions): never shrinks.
    pub fn add_partitions(
        &self,
        logs: &LogManager,
        name: &str,
        total: i32,
    ) -> Result<TopicMeta, TopicError> {
        // The new partitions copy partition 0's config: no config change may run between that
        // read and their creation (it would not reach them). Lock order: config, then topics.
        let _serialised = self.config_change_lock();
        let mut topics = self.topics.write();
        let t = topics.get_mut(name).ok_or_else(|| {
            TopicError::new(
                ResponseError::UnknownTopicOrPartition,
                format!("topic {name} does not exist"),
            )
        })?;
        if total <= t.partitions {
            return Err(TopicError::new(
                ResponseError::InvalidPartitions,
                format!(
                    "topic {name} has {} partitions; {total} would not add any",
                    t.partitions
                ),
            ));
        }
        // Never the broker defaults in the place of the topic's own config (a mirror topic's
        // read-only mark with it): with no partition loaded it cannot be read.
        let config = topic_log_config(logs, name, t.partitions).ok_or_else(|| {
            TopicError::new(
                ResponseError::KafkaStorageError,
                format!(
                    "no partition of topic {name} is loaded (offline data directories): its config cannot be read"
                ),
            )
        })?;
        for p in t.partitions..total {
            let tp = TopicPartition {
                topic: name.to_string(),
                partition: p,
            };
            logs.create(&tp, uuid_to_topic_id(t.id), config.clone())
                .map_err(|e| {
                    TopicError::new(ResponseError::KafkaStorageError, ErrorChain(&e).to_string())
                })?;
            t.partitions = p + 1;
        }
        Ok(t.clone())
    }

    /// Deletes a topic and all its partitions. A topic with a partition in an offline data
    /// directory is refused whole (KAFKA_STORAGE_ERROR), nothing deleted: that partition's files
    /// cannot be removed, and would bring the topic back, half deleted, at the next start
    /// (Kafka keeps such a deletion pending until the directory returns).
    pub fn delete(&self, logs: &LogManager, name: &str) -> Result<TopicMeta, TopicError> {
        self.delete_then(logs, name, None, |_| {})
    }

    /// [`delete`](Self::delete) of topic `name` only while its id is `id` (DeleteTopics by id,
    /// which resolved `name` from `id` earlier): a topic deleted and created again under the
    /// same name since then has another id and is left alone, UNKNOWN_TOPIC_ID. The id is
    /// compared under the lock that creation and deletion take, so no recreation can slip in
    /// between the check and the deletion.
    pub fn delete_with_id(
        &self,
        logs: &LogManager,
        name: &str,
        id: Uuid,
    ) -> Result<TopicMeta, TopicError> {
        self.delete_then(logs, name, Some(id), |_| {})
    }

    /// [`delete`](Self::delete) (with `id`: [`delete_with_id`](Self::delete_with_id)) that
    /// runs `deleted` once the topic has left the registry for good — also after a failure
    /// part-way that took it out — and before the name is free again: under the lock that
    /// creation takes, so nothing `deleted` drops for the name (a group's committed offsets,
    /// as Kafka's `onPartitionsDeleted` at the deletion) can belong to a topic created again
    /// under it. `deleted` must not call back into the registry (the lock is held).
    pub fn delete_then(
        &self,
        logs: &LogManager,
        name: &str,
        id: Option<Uuid>,
        deleted: impl FnOnce(&TopicMeta),
    ) -> Result<TopicMeta, TopicError> {
        let mut topics = self.topics.write();
        let known = match (topics.get(name), id) {
            (Some(known), Some(id)) if known.id != id => None,
            (known, _) => known,
        };
        let Some(known) = known else {
            return Err(match id {
                Some(id) => TopicError::new(
                    ResponseError::UnknownTopicId,
                    format!("no topic {name} with id {id}"),
                ),
                None => TopicError::new(
                    ResponseError::UnknownTopicOrPartition,
                    format!("topic {name} does not exist"),
                ),
            });
        };
        check_no_partition_offline(logs, name, known.partitions, "delete")?;
        let t = topics
            .remove(name)
            .expect("present: checked above, under the same lock");
        let mut first_err = None;
        let mut left = false;
        for p in 0..t.partitions {
            let tp = TopicPartition {
                topic: name.to_string(),
                partition: p,
            };
            if logs.get(&tp).is_some()
                && let Err(e) = logs.delete(&tp)
            {
                first_err.get_or_insert(e);
                left |= logs.get(&tp).is_some();
            }
        }
        if !left {
            deleted(&t);
        }
        match first_err {
            None => Ok(t),
            Some(e) => {
                // Partitions still in the log manager keep the topic in the registry, so that the
                // two agree and DeleteTopics can be tried again.
                if left {
                    topics.insert(name.to_string(), t);
                }
                Err(TopicError::new(
                    ResponseError::KafkaStorageError,
                    ErrorChain(&e).to_string(),
                ))
            }
        }
    }
}

/// `StrBytes` from a `&str`.
pub fn sb(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topic_names_follow_kafkas_rules() {
        assert!(validate_topic_name("orders.v1_x-2").is_ok());
        for bad in ["", ".", "..", "a b", "ä", &"x".repeat(250)] {
            assert!(validate_topic_name(bad).is_err(), "{bad:?}");
        }
    }
}
