//! Kafka's Java AdminClient (kafka-clients 4.3.0) administers consumer groups on
//! `mirrorlog serve`, with a KafkaConsumer (group.protocol=classic, a static member) holding
//! group `g1` in the same program: listGroups (all, consumer groups only) and the deprecated
//! listConsumerGroups, describeConsumerGroups (members, assignment, state) and
//! describeClassicGroups, listConsumerGroupOffsets,
//! alterConsumerGroupOffsets (refused while the group has members, then accepted; a new group
//! made by it alone is a simple consumer group), deleteConsumerGroupOffsets (OffsetDelete, API
//! 47: refused for a subscribed topic while the consumer is in the group, then deleting),
//! removeMembersFromConsumerGroup and deleteConsumerGroups (`AdminScenarios groups`).

mod common;

use common::java::{JavaClient, assert_printed};
use common::{Serve, free_port};

#[test]
fn the_java_admin_client_administers_consumer_groups() {
    let Some(java) = JavaClient::compile("AdminScenarios") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut broker = Serve::start(dir.path(), free_port());
    let out = java.run(&["groups", &broker.addr]);
    let stable = "type=Classic protocol=consumer state=Stable simple=false";
    assert_printed(
        &out,
        &[
            ("consumed", "10"),
            ("list_groups", stable),
            ("list_groups.consumer", stable),
            ("list_consumer_groups", "[g1]"),
            (
                "describe.active",
                "state=Stable type=Classic simple=false assignor=range coordinator=1 \
                 members=[inst-1/client-inst-1//127.0.0.1/id_set=true/[g-0, g-1]]",
            ),
            (
                "describe_classic.active",
                "state=Stable protocol=consumer data=range members=1",
            ),
            ("offsets.active", "{g-0=5, g-1=4}"),
            ("alter_offsets.active", "UnknownMemberIdException"),
            ("delete_offsets.active", "GroupSubscribedToTopicException"),
            ("delete_group.active", "GroupNotEmptyException"),
            ("remove_members", "ok"),
            ("remove_members.unknown", "UnknownMemberIdException"),
            (
                "describe.after_remove",
                "state=Empty type=Classic simple=false assignor= coordinator=1 members=[]",
            ),
            ("alter_offsets.empty", "ok"),
            ("offsets.after_alter", "{g-0=2, g-1=3}"),
            ("delete_offsets.empty", "ok"),
            ("offsets.after_delete_offsets", "{g-1=3}"),
            ("delete_offsets.unknown_group", "GroupIdNotFoundException"),
            ("alter_offsets.new_group", "ok"),
            (
                "list_groups.g2",
                "type=Classic protocol= state=Empty simple=true",
            ),
            (
                "describe.g2",
                "state=Empty type=Classic simple=true assignor= coordinator=1 members=[]",
            ),
            ("offsets.g2", "{g-1=7}"),
            ("delete_group", "ok"),
            ("list_groups.after_delete", "absent"),
            ("describe.after_delete", "GroupIdNotFoundException"),
            ("offsets.after_delete", "{}"),
            ("delete_group.unknown", "GroupIdNotFoundException"),
        ],
    );
    assert_eq!(broker.stop(), Some(0), "clean exit on SIGTERM");
}
