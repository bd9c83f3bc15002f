//! The pre-flight check (`mirrorlog mirrors --preflight`): what would go wrong if these topics
//! were mirrored from this source into this destination, asked before anything is created.
//! Both clusters are reached through [`SourceCluster`] (the destination is only read), so the
//! check runs against any Kafka-protocol clusters.
//!
//! Checks, each giving [`Finding`]s of [`Severity`] `Ok`, `Warn` or `Fail`:
//!
//! | check | fails when | warns when |
//! |---|---|---|
//! | `clusters` | source and destination are the same cluster (same cluster id) | — |
//! | `pattern` | an include pattern matches no source topic | — |
//! | `topic` | a named topic is missing on the source, or excluded by `mirror.topics.exclude` | — |
//! | `topic-name` | the destination has a topic of that name with another topic id (it is not this topic, and would block the mirror) | the destination has it with the same id (a failback or a restart: LOG_ALIGNMENT will truncate it) |
//! | `topic-id` | the destination holds the source's topic id under another name | — |
//! | `topic-config` | a source config the destination refuses (its value is invalid there) | a source config the destination does not know (it is skipped) |
//! | `group` | a group id is a consumer group on one side and a share group on the other (KAFKA-20799's collision) | a synced group is active on the destination (its offsets will not be synced while it is) |
//!
//! Internal topics (`__…`) and topics matched by `mirror.topics.exclude` are never selected by
//! patterns. Only groups matching `mirror.groups.include` and not `mirror.groups.exclude` are
//! checked.

use crate::manager::{MirrorConfig, compile_patterns};
use crate::source::{SourceCluster, SourceError};
use mirrorlog_engine::config::LogConfig;
use std::collections::BTreeMap;

/// How bad a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    /// Checked, fine.
    Ok,
    /// Will work, but look.
    Warn,
    /// Will not work as intended.
    Fail,
}

impl Severity {
    /// `OK`, `WARN`, `FAIL`.
    pub fn name(self) -> &'static str {
        match self {
            Severity::Ok => "OK",
            Severity::Warn => "WARN",
            Severity::Fail => "FAIL",
        }
    }
}

/// One result of the check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// Which check (`topic-name`, `group`, …; see the module docs).
    pub check: &'static str,
    /// What it is about (a topic, a group, a pattern).
    pub subject: String,
    /// How bad.
    pub severity: Severity,
    /// What was found.
    pub detail: String,
}

/// What would be mirrored: topics by name and include patterns, with the mirror's settings
/// (`mirror.topics.exclude`, `mirror.groups.include/exclude`, `mirror.topic.properties.exclude`).
#[derive(Debug, Clone)]
pub struct Plan {
    /// Topics by name.
    pub topics: Vec<String>,
    /// Include patterns (whole-name regexes).
    pub patterns: Vec<String>,
    /// The mirror's settings.
    pub config: MirrorConfig,
}

fn finding(
    check: &'static str,
    subject: impl Into<String>,
    severity: Severity,
    detail: impl Into<String>,
) -> Finding {
    Finding {
        check,
        subject: subject.into(),
        severity,
        detail: detail.into(),
    }
}

fn hex(id: &[u8; 16]) -> String {
    id.iter().map(|b| format!("{b:02x}")).collect()
}

fn is_share(g: &crate::source::GroupListing) -> bool {
    g.group_type.as_deref() == Some("share") || g.protocol_type == "share"
}

/// Runs the check.
///
/// # Errors
/// Either cluster is unreachable, or a pattern is not a valid regex
/// ([`SourceError::Protocol`] naming it).
pub fn preflight(
    source: &dyn SourceCluster,
    dest: &dyn SourceCluster,
    plan: &Plan,
) -> Result<Vec<Finding>, SourceError> {
    let bad_regex = SourceError::Protocol;
    let include = compile_patterns("pattern", &plan.patterns).map_err(bad_regex)?;
    let exclude = compile_patterns("mirror.topics.exclude", &plan.config.topics_exclude)
        .map_err(bad_regex)?;
    let props = compile_patterns(
        "mirror.topic.properties.exclude",
        &plan.config.topic_properties_exclude,
    )
    .map_err(bad_regex)?;
    let groups_in = compile_patterns("mirror.groups.include", &plan.config.groups_include)
        .map_err(bad_regex)?;
    let groups_out = compile_patterns("mirror.groups.exclude", &plan.config.groups_exclude)
        .map_err(bad_regex)?;
    let mut out = vec![];

    let src_md = source.metadata(None)?;
    let dst_md = dest.metadata(None)?;
    if src_md.cluster_id == dst_md.cluster_id {
        out.push(finding(
            "clusters",
            &src_md.cluster_id,
            Severity::Fail,
            "source and destination are the same cluster",
        ));
    } else {
        out.push(finding(
            "clusters",
            format!("{} -> {}", src_md.cluster_id, dst_md.cluster_id),
            Severity::Ok,
            "two distinct clusters",
        ));
    }

    let excluded = |name: &str| exclude.iter().any(|r| r.is_match(name));
    let source_topics: BTreeMap<&str, &crate::source::SourceTopic> = src_md
        .topics
        .iter()
        .filter(|t| t.error == 0)
        .map(|t| (t.name.as_str(), t))
        .collect();
    let mut selected: Vec<&str> = vec![];
    for name in &plan.topics {
        match source_topics.get(name.as_str()) {
            None => out.push(finding(
                "topic",
                name,
                Severity::Fail,
                "no such topic on the source",
            )),
            Some(_) if excluded(name) => out.push(finding(
                "topic",
                name,
                Severity::Fail,
                "matches mirror.topics.exclude (exclude wins)",
            )),
            Some(t) => selected.push(t.name.as_str()),
        }
    }
    for (p, re) in plan.patterns.iter().zip(&include) {
        let matched: Vec<&str> = source_topics
            .values()
            .filter(|t| !t.internal && !excluded(&t.name) && re.is_match(&t.name))
            .map(|t| t.name.as_str())
            .collect();
        if matched.is_empty() {
            out.push(finding(
                "pattern",
                p,
                Severity::Fail,
                "matches no source topic (after mirror.topics.exclude)",
            ));
        } else {
            out.push(finding(
                "pattern",
                p,
                Severity::Ok,
                format!("matches {}", matched.join(", ")),
            ));
        }
        for m in matched {
            if !selected.contains(&m) {
                selected.push(m);
            }
        }
    }

    for name in &selected {
        let st = source_topics[name];
        let local_same_name = dst_md
            .topics
            .iter()
            .find(|t| t.name == *name && t.error == 0);
        match local_same_name {
            Some(d) if d.id == st.id => out.push(finding(
                "topic-name",
                *name,
                Severity::Warn,
                "the destination has this topic already (same topic id): a failback or a restart; LOG_ALIGNMENT will truncate it to what the source holds",
            )),
            Some(d) => out.push(finding(
                "topic-name",
                *name,
                Severity::Fail,
                format!(
                    "the destination has another topic of this name (topic id {}, the source's is {})",
                    hex(&d.id),
                    hex(&st.id)
                ),
            )),
            None => out.push(finding(
                "topic-name",
                *name,
                Severity::Ok,
                "free on the destination",
            )),
        }
        if st.id != [0; 16]
            && let Some(other) = dst_md
                .topics
                .iter()
                .find(|t| t.id == st.id && t.name != *name)
        {
            out.push(finding(
                "topic-id",
                *name,
                Severity::Fail,
                format!(
                    "the destination holds topic id {} as topic {}",
                    hex(&st.id),
                    other.name
                ),
            ));
        }
        for (k, v) in source.topic_configs(name)? {
            if props.iter().any(|r| r.is_match(&k)) {
                continue;
            }
            if !LogConfig::SUPPORTED_TOPIC_KEYS.contains(&k.as_str()) {
                out.push(finding(
                    "topic-config",
                    format!("{name} {k}={v}"),
                    Severity::Warn,
                    "the destination does not support this config: it is not copied",
                ));
            } else if let Err(e) = LogConfig::default().with_overrides([(k.as_str(), v.as_str())]) {
                out.push(finding(
                    "topic-config",
                    format!("{name} {k}={v}"),
                    Severity::Fail,
                    format!("the destination refuses it: {e}"),
                ));
            }
        }
    }

    let dest_groups = dest.list_groups()?;
    for g in source.list_groups()? {
        let id = g.group_id.as_str();
        if !groups_in.iter().any(|r| r.is_match(id)) || groups_out.iter().any(|r| r.is_match(id)) {
            continue;
        }
        let Some(d) = dest_groups.iter().find(|d| d.group_id == g.group_id) else {
            out.push(finding("group", id, Severity::Ok, "not on the destination"));
            continue;
        };
        if is_share(&g) != is_share(d) {
            let kind =
                |x: &crate::source::GroupListing| if is_share(x) { "share" } else { "consumer" };
            out.push(finding(
                "group",
                id,
                Severity::Fail,
                format!(
                    "a {} group on the source but a {} group on the destination: offsets cannot be synced",
                    kind(&g),
                    kind(d)
                ),
            ));
        } else if d
            .state
            .as_deref()
            .is_some_and(|s| !matches!(s, "Empty" | "Dead"))
        {
            out.push(finding(
                "group",
                id,
                Severity::Warn,
                format!(
                    "active on the destination ({}): its offsets are not synced while it has members",
                    d.state.as_deref().unwrap_or("?")
                ),
            ));
        } else {
            out.push(finding(
                "group",
                id,
                Severity::Warn,
                "exists on the destination without members: the mirror will overwrite its offsets",
            ));
        }
    }
    Ok(out)
}
