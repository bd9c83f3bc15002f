//! Which mirror owns each destination topic: KIP-1279 lets a topic belong to at most one
//! cluster mirror at a time (starting it on a second one is TOPIC_ALREADY_IN_CLUSTER_MIRROR
//! unless the first has STOPPED it). Two mirrors of the same source cluster otherwise both pass
//! every per-topic check (same name, same topic id) and both append to one log.
//!
//! The table is shared by every [`MirrorManager`](crate::manager::MirrorManager) of a broker.
//! A mirror **claims** a topic before it creates or touches its destination partitions (an
//! operator's start, a pattern start, discovery, a restore at restart) and **releases** it once
//! every partition of the topic is STOPPED and the topic is writable again, when a start of the
//! topic fails with nothing of it left running (after the topic is put back as it was: removed
//! if the start created it, writable again if it was failed over), or when the mirror is
//! deleted. Partition growth checks the claim under the same lock as a start. Only the owner writes a topic's log: fetching, log alignment, epoch bumps and the
//! stop sequence.
//!
//! Deadlock freedom: the table's one lock guards a map and nothing else. It is taken for a
//! lookup or an update and dropped before the caller does anything more; it is never held while
//! calling into a mirror, taking a mirror's or a partition's lock, or joining a thread. So a
//! mirror thread may use it while `Mirrors::shutdown`/`delete` hold their map lock and join
//! that thread.

use parking_lot::Mutex;
use std::collections::BTreeMap;

/// Destination topic name → the name of the mirror that owns it. See the module docs.
#[derive(Debug, Default)]
pub struct TopicClaims {
    owners: Mutex<BTreeMap<String, String>>,
}

impl TopicClaims {
    /// An empty table.
    pub fn new() -> TopicClaims {
        TopicClaims::default()
    }

    /// Claims `topic` for `mirror`: succeeds when the topic is unowned (it is now `mirror`'s) or
    /// already `mirror`'s.
    ///
    /// # Errors
    /// The name of the other mirror that owns `topic` (nothing changes).
    pub fn claim(&self, topic: &str, mirror: &str) -> Result<(), String> {
        let mut owners = self.owners.lock();
        match owners.get(topic) {
            Some(owner) if owner != mirror => Err(owner.clone()),
            Some(_) => Ok(()),
            None => {
                owners.insert(topic.to_string(), mirror.to_string());
                Ok(())
            }
        }
    }

    /// The mirror that owns `topic`, if any.
    pub fn owner(&self, topic: &str) -> Option<String> {
        self.owners.lock().get(topic).cloned()
    }

    /// Whether `mirror` owns `topic`.
    pub fn owns(&self, topic: &str, mirror: &str) -> bool {
        self.owners.lock().get(topic).is_some_and(|o| o == mirror)
    }

    /// Releases `topic` if `mirror` owns it (another mirror's claim is left alone); whether it
    /// did.
    pub fn release(&self, topic: &str, mirror: &str) -> bool {
        let mut owners = self.owners.lock();
        if owners.get(topic).is_some_and(|o| o == mirror) {
            owners.remove(topic);
            true
        } else {
            false
        }
    }

    /// Releases every topic `mirror` owns (the mirror is deleted).
    pub fn release_all(&self, mirror: &str) {
        self.owners.lock().retain(|_, o| o != mirror);
    }

    /// The topics `mirror` owns, sorted.
    pub fn owned_by(&self, mirror: &str) -> Vec<String> {
        self.owners
            .lock()
            .iter()
            .filter(|(_, o)| *o == mirror)
            .map(|(t, _)| t.clone())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_topic_claimed_by_one_mirror_is_refused_to_another_until_released() {
        let c = TopicClaims::new();
        c.claim("orders", "east").unwrap();
        c.claim("orders", "east").unwrap();
        assert_eq!(c.claim("orders", "west"), Err("east".to_string()));
        assert!(!c.release("orders", "west"), "not west's to release");
        assert_eq!(c.owner("orders").as_deref(), Some("east"));
        assert!(c.release("orders", "east"));
        c.claim("orders", "west").unwrap();
        assert!(c.owns("orders", "west"));
        c.claim("payments", "west").unwrap();
        assert_eq!(c.owned_by("west"), ["orders", "payments"]);
        c.release_all("west");
        assert_eq!(c.owner("orders"), None);
        assert!(c.owned_by("west").is_empty());
    }
}
