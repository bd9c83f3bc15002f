//! DescribeLogDirs (API 35, v1–4): what the Java AdminClient's `describeLogDirs` and
//! `describeReplicaLogDirs` send, answered as Kafka's `ReplicaManager.describeLogDirs`: one
//! result per configured data directory (its absolute path), each partition there with its size
//! and an offset lag of 0 (this node leads every partition; there are no future replicas), and
//! from v4 the file system's total and usable bytes. An offline directory answers
//! KAFKA_STORAGE_ERROR and nothing else.

use crate::broker::Broker;
use crate::topics::sb;
use kafka_protocol::ResponseError;
use kafka_protocol::messages::describe_log_dirs_response::{
    DescribeLogDirsPartition, DescribeLogDirsResult, DescribeLogDirsTopic,
};
use kafka_protocol::messages::{DescribeLogDirsRequest, DescribeLogDirsResponse, TopicName};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;

/// A directory's topics, each with its listed partitions as (partition, size in bytes).
type DirTopics = BTreeMap<String, Vec<(i32, i64)>>;

/// The version that added `total_bytes` and `usable_bytes`.
const SPACE_SINCE: i16 = 4;

/// DescribeLogDirs v1–4. `topics` null asks for every partition; otherwise only the named
/// partitions are listed (each topic in a directory still appears, with no partition, as in
/// Kafka).
pub fn describe_log_dirs(b: &Broker, r: DescribeLogDirsRequest, v: i16) -> DescribeLogDirsResponse {
    // The asked partitions by topic: each topic name held once, and only partitions the topic
    // has, so the set is bounded by this broker's partitions, not by the request (a long name
    // repeated for every listed partition multiplied the request's size many times over).
    let asked: Option<HashMap<&str, HashSet<i32>>> = r.topics.as_ref().map(|topics| {
        let mut asked: HashMap<&str, HashSet<i32>> = HashMap::new();
        for t in topics {
            let Some(meta) = b.topics.get(t.topic.0.as_str()) else {
                continue;
            };
            let wanted = t
                .partitions
                .iter()
                .copied()
                .filter(|p| (0..meta.partitions).contains(p));
            asked.entry(t.topic.0.as_str()).or_default().extend(wanted);
        }
        asked
    });
    let offline: HashSet<std::path::PathBuf> =
        b.logs.offline_dirs().into_iter().map(|(d, _)| d).collect();
    let mut by_dir: BTreeMap<&Path, DirTopics> = BTreeMap::new();
    let handles = b.logs.partitions();
    for h in &handles {
        let tp = h.topic_partition();
        let wanted = asked.as_ref().is_none_or(|a| {
            a.get(tp.topic.as_str())
                .is_some_and(|ps| ps.contains(&tp.partition))
        });
        let partitions = by_dir
            .entry(h.data_dir())
            .or_default()
            .entry(tp.topic.clone())
            .or_default();
        if wanted {
            let size = i64::try_from(h.read().size_bytes()).unwrap_or(i64::MAX);
            partitions.push((tp.partition, size));
        }
    }
    let results = b
        .config
        .logs
        .data_dirs
        .iter()
        .map(|dir| {
            let path = std::path::absolute(dir).unwrap_or_else(|_| dir.clone());
            let mut out =
                DescribeLogDirsResult::default().with_log_dir(sb(&path.display().to_string()));
            if offline.contains(dir) {
                return out.with_error_code(ResponseError::KafkaStorageError.code());
            }
            if v >= SPACE_SINCE
                && let Some((total, usable)) = space(dir)
            {
                out = out.with_total_bytes(total).with_usable_bytes(usable);
            }
            let topics = by_dir
                .get(dir.as_path())
                .map(|topics| {
                    topics
                        .iter()
                        .map(|(topic, partitions)| {
                            let mut partitions = partitions.clone();
                            partitions.sort_unstable();
                            DescribeLogDirsTopic::default()
                                .with_name(TopicName(sb(topic)))
                                .with_partitions(
                                    partitions
                                        .into_iter()
                                        .map(|(p, size)| {
                                            DescribeLogDirsPartition::default()
                                                .with_partition_index(p)
                                                .with_partition_size(size)
                                                .with_offset_lag(0)
                                                .with_is_future_key(false)
                                        })
                                        .collect(),
                                )
                        })
                        .collect()
                })
                .unwrap_or_default();
            out.with_topics(topics)
        })
        .collect();
    DescribeLogDirsResponse::default().with_results(results)
}

/// The total and usable bytes of the file system holding `dir` (Kafka's `FileStore`
/// `getTotalSpace` / `getUsableSpace`: usable is what an unprivileged writer may use), or `None`
/// when `statvfs` fails.
fn space(dir: &Path) -> Option<(i64, i64)> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    // SAFETY: `statvfs` is plain old data, so all-zero is a valid value to be overwritten.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is a NUL-terminated path and `st` a valid, writable statvfs.
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return None;
    }
    let block = st.f_frsize as u128;
    let clamp = |blocks: u128| i64::try_from(blocks * block).unwrap_or(i64::MAX);
    Some((clamp(st.f_blocks as u128), clamp(st.f_bavail as u128)))
}
