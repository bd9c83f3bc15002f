//! Mirrors hosted by this broker: each [`MirrorManager`] copies topics from one source cluster
//! (reached through [`KafkaSource`](crate::source_client::KafkaSource)) into read-only topics of
//! this broker, which its topic registry serves like any other (produce refused with
//! READ_ONLY_TOPIC until the topic is stopped — failed over).

use crate::broker::Broker;
use crate::topics::TopicError;
use mirrorlog_engine::config::LogConfig;
use mirrorlog_index::TopicPartition;
use mirrorlog_mirror::manager::{DestinationTopics, MirrorConfig, MirrorManager};
use mirrorlog_mirror::source::SourceCluster;
use mirrorlog_mirror::state::MirrorStateStore;
use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::sync::{Arc, Weak};

/// `__mirror_state` partitions on this broker (KIP-1279's `mirror.state.topic.num.partitions`
/// defaults to 50 across a cluster; one node needs fewer).
pub const MIRROR_STATE_PARTITIONS: i32 = 8;

/// Destination topics of a mirror, created in the broker's registry.
#[derive(Debug)]
pub struct BrokerTopics(Weak<Broker>);

impl BrokerTopics {
    fn broker(&self) -> Result<Arc<Broker>, String> {
        self.0
            .upgrade()
            .ok_or_else(|| "the broker is shutting down".to_string())
    }
}

impl DestinationTopics for BrokerTopics {
    fn ensure_mirror_topic(&self, name: &str, partitions: i32) -> Result<(), String> {
        let b = self.broker()?;
        match b.topics.get(name) {
            None => {
                let cfg = LogConfig {
                    read_only: true,
                    ..b.logs.default_log_config().clone()
                };
                b.topics
                    .create(&b.logs, name, partitions, cfg, None)
                    .map_err(|e: TopicError| e.message)?;
            }
            Some(t) => {
                let tp = TopicPartition {
                    topic: name.into(),
                    partition: 0,
                };
                let read_only = b.logs.get(&tp).is_some_and(|h| h.read().is_read_only());
                if !read_only {
                    return Err(format!(
                        "topic {name} exists on the destination and is not a mirror topic"
                    ));
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

    fn set_read_only(&self, name: &str, read_only: bool) -> Result<(), String> {
        let b = self.broker()?;
        let t = b
            .topics
            .get(name)
            .ok_or_else(|| format!("no topic {name}"))?;
        for p in 0..t.partitions {
            let tp = TopicPartition {
                topic: name.into(),
                partition: p,
            };
            let h = b
                .logs
                .get(&tp)
                .ok_or_else(|| format!("no partition {tp}"))?;
            let mut cfg = h.read().config().clone();
            cfg.read_only = read_only;
            b.logs.update_config(&tp, cfg).map_err(|e| e.to_string())?;
        }
        Ok(())
    }
}

/// The mirrors of one broker.
#[derive(Debug, Default)]
pub struct Mirrors {
    store: Mutex<Option<Arc<MirrorStateStore>>>,
    mirrors: Mutex<BTreeMap<String, Arc<MirrorManager>>>,
}

impl Mirrors {
    /// Creates mirror `config.name` of `source` on `broker` and starts its threads.
    ///
    /// # Errors
    /// A mirror of that name exists, an invalid config, or `__mirror_state` cannot be opened.
    pub fn create(
        &self,
        broker: &Arc<Broker>,
        config: MirrorConfig,
        source: Arc<dyn SourceCluster>,
    ) -> anyhow::Result<Arc<MirrorManager>> {
        let mut mirrors = self.mirrors.lock();
        anyhow::ensure!(
            !mirrors.contains_key(&config.name),
            "cluster mirror {} already exists",
            config.name
        );
        let store = {
            let mut s = self.store.lock();
            match &*s {
                Some(st) => st.clone(),
                None => {
                    let st = Arc::new(MirrorStateStore::open(
                        broker.logs.clone(),
                        MIRROR_STATE_PARTITIONS,
                    )?);
                    broker.topics.refresh(&broker.logs);
                    *s = Some(st.clone());
                    st
                }
            }
        };
        let name = config.name.clone();
        let m = MirrorManager::new(
            config,
            source,
            broker.logs.clone(),
            Arc::new(BrokerTopics(Arc::downgrade(broker))),
            store,
            broker.clock().clone(),
        )
        .map_err(|e| anyhow::anyhow!("{e}"))?;
        m.run();
        mirrors.insert(name, m.clone());
        Ok(m)
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
    }
}
