//! The crate's scenario tests, one file each beside this one, compiled as modules of one test
//! binary: one link instead of one per file keeps a clean build's `target/` small enough for CI
//! (each binary carries the whole crate and its dependencies). A test that changes process-wide
//! state (signal dispositions, resource limits, the global allocator) or that is run on its own
//! (the simulation) stays a binary of its own, listed in `Cargo.toml`; `every_test_file_is_built`
//! fails when a file under `tests/` is in neither place.

mod common;

mod a_cluster_mirror_deleted_part_way_leaves_nothing_to_its_namesake;
mod a_compacted_source_log_is_mirrored_across_its_gaps;
mod a_connection_that_reads_nothing_is_closed_after_the_idle_timeout;
mod a_failed_mirror_start_leaves_no_read_only_topic;
mod a_group_loaded_over_group_max_size_rebalances;
mod a_mirror_topic_deleted_by_a_client_can_be_stopped;
mod a_session_ending_in_the_initial_delay_ends_the_join_phase;
mod a_stopped_or_deleted_mirror_lets_another_take_its_topic;
mod a_topic_whose_last_partition_is_offline_keeps_its_partition_count;
mod a_topic_whose_partition_zero_is_offline_keeps_its_config;
mod acks0_produce_error_closes_connection;
mod add_partitions_to_txn_of_a_partition_in_an_offline_dir;
mod add_partitions_to_txn_refuses_internal_topics;
mod admin_offsets;
mod alter_configs_keeps_a_mirror_topics_copied_configs;
mod alter_configs_of_a_mirror_topic_whose_states_are_offline;
mod alter_configs_of_a_topic_with_an_offline_partition_changes_none;
mod alter_configs_of_an_invalid_topic_name;
mod alter_configs_refusals_carry_kafkas_message;
mod alter_configs_replaces_topic_overrides;
mod an_empty_group_id_is_answered_as_kafka;
mod an_initial_delay_of_zero_ends_the_first_join_phase_at_once;
mod an_offset_commit_keeps_a_members_session_alive;
mod an_unknown_isolation_level_fails_the_whole_request;
mod api_versions_lists_this_brokers_features;
mod broker_loggers_answer_as_kafka;
mod concurrent_alter_configs_lose_updates;
mod coordinator_partitions_with_legacy_entries_load;
mod coordinator_settings_take_effect;
mod create_topics_and_partitions_with_no_time_left_time_out;
mod create_topics_of_an_existing_internal_topic_already_exists;
mod create_topics_of_two_colliding_names_creates_both;
mod create_topics_refuses_the_kafka_metadata_topic;
mod delete_topics_naming_one_topic_by_name_and_id_deletes_nothing;
mod deleted_topic_keeps_group_offsets;
mod deleted_topic_keeps_pending_txn_offsets;
mod describe_and_list_transactions;
mod describe_cluster_v2_lists_this_broker_unfenced;
mod describe_configs_of_a_topic_lists_every_kafka_topic_config;
mod describe_configs_of_the_broker_lists_every_key_it_takes;
mod describe_configs_of_the_broker_lists_the_ignored_keys_named;
mod describe_lists_a_mirror_topic_whose_states_are_offline;
mod describe_log_dirs;
mod describe_producers;
mod describe_producers_repeated_partition;
mod describe_transactions_of_an_unloaded_partition;
mod describe_transactions_repeated_id;
mod durable_produce_overlap;
mod durable_produce_pool;
mod end_txn_wakes_only_the_partitions_it_marked;
mod fetch_long_poll_below_a_new_log_start_answers_at_once;
mod fetch_long_poll_completes_as_kafkas_delayed_fetch;
mod fetch_long_poll_ends_when_its_log_is_truncated_under_it;
mod fetch_long_poll_markers;
mod fetch_min_bytes_above_max_bytes_answers_at_once;
mod fetch_of_a_batch_the_limit_cuts_answers_no_records;
mod fetch_repeated_partition_is_answered_once;
mod fetch_session_by_topic_id_keeps_the_name_it_resolved;
mod fetch_session_cache_slots_are_configurable;
mod fetch_session_long_poll_waits_beside_a_deleted_topic;
mod fetch_session_outlives_its_eviction_time_while_the_cache_has_room;
mod fetch_v16_names_the_current_leader_of_a_fenced_partition;
mod fetch_v5_answers_a_storage_error_as_not_leader;
mod first_mirror_refresh_loses_concurrent_topic_changes;
mod group_coordinator;
mod idle_connections_are_closed;
mod internal_topic_retention_alterable;
mod invalid_topic_names_answer_as_kafka;
mod leave_group_of_an_unknown_group_answers_each_member;
mod list_transactions_unknown_state_filter;
mod long_poll_not_woken_by_a_mirror_appending_elsewhere;
mod long_poll_not_woken_by_heartbeats;
mod long_poll_on_a_mirror_partition_woken_by_its_append;
mod long_poll_on_consumer_offsets_woken_by_a_mirror_group_commit;
mod long_poll_on_consumer_offsets_woken_by_a_session_timeout;
mod long_poll_on_consumer_offsets_woken_only_on_its_partition;
mod long_poll_on_deleted_topic_waits_out_max_wait;
mod long_poll_on_transaction_state_woken_by_a_timeout_abort;
mod long_poll_on_transaction_state_woken_only_on_its_partition;
mod long_poll_wakes_only_for_its_partitions;
mod meta_properties_refuses_another_node_or_cluster;
mod metadata_auto_create_of_a_colliding_name_is_unknown;
mod metadata_auto_create_of_the_kafka_metadata_topic;
mod metadata_before_v12_naming_a_topic_id_is_refused;
mod metadata_by_topic_id_with_empty_names;
mod metadata_of_a_partition_in_an_offline_dir;
mod metadata_of_an_unknown_topic_carries_its_authorized_operations;
mod mirror_admin_durability;
mod mirror_commit_clamp;
mod mirror_config_sync_applies_the_keys_the_destination_accepts;
mod mirror_group_sync_keeps_commit_metadata;
mod mirror_group_sync_rewrites_no_unchanged_offset;
mod mirror_rpc_wire;
mod mirror_state_configs_not_alterable;
mod mirror_state_partition_offline_at_start;
mod mirroring_a_compacted_topic_keeps_every_record;
mod non_utf8_client_id_is_accepted;
mod offset_commit_to_an_unknown_partition_keeps_its_error;
mod offset_delete;
mod offset_delete_of_a_partition_in_an_offline_dir;
mod offset_delete_of_a_partition_the_broker_does_not_have;
mod offset_delete_on_an_active_group;
mod offset_fetch_group_error_per_version;
mod offset_for_leader_epoch_current_epoch_not_in_cache;
mod offset_metadata_size_counts_characters_as_kafka;
mod offsets_on_offline_log_dir;
mod offsets_partition_in_offline_dir_recreated;
mod produce_a_partial_batch_after_a_whole_one_is_dropped;
mod produce_acks1_stamps_the_raised_leader_epoch;
mod produce_checks_run_in_kafkas_order;
mod produce_error_messages_are_kafkas;
mod produce_fetch;
mod produce_invalid_acks_keeps_earlier_partition_errors;
mod produce_of_a_corrupt_first_batch_fails_the_whole_request;
mod produce_of_a_transactional_batch_without_a_producer_id;
mod produce_of_a_transactional_control_batch;
mod produce_of_two_transactional_producers_is_refused;
mod produce_record_errors_name_every_invalid_record;
mod produce_repeated_partition_is_appended_once;
mod produce_to_a_partition_whose_dir_failed_answers_no_log_start;
mod produce_to_partition_of_offline_dir;
mod produce_v10_names_the_current_leader_of_an_undone_append;
mod produce_validation_answers_as_kafka;
mod sasl_on_the_plaintext_listener_is_answered_illegal_sasl_state;
mod shutdown_hangs_on_a_client_that_does_not_read;
mod shutdown_waits_for_long_poll_fetch;
mod source_client;
mod the_admin_client_id_may_produce_to_an_internal_topic;
mod the_mirror_reads_a_topic_whose_partition_zero_is_offline;
mod topic_override_equal_to_broker_default;
mod two_mirrors_of_one_source_take_one_topic;
mod txn_coordinator;
mod txn_marker_retries_back_off;
mod txn_markers_wait_for_a_partition_in_an_offline_dir;
mod txn_state_partition_in_offline_dir_recreated;
mod txn_state_partition_offline_at_start;
mod txn_state_partition_zero_offline_at_start;
mod txn_state_write_errors_answer_as_kafka;
mod txn_verification;
mod txn_verification_answers_transaction_abortable_to_new_clients;
mod unknown_config_resource_type_answers_as_kafka;
mod write_txn_markers;
mod write_txn_markers_repeated_partition;
mod write_txn_markers_to_an_offline_partition;
mod write_txn_markers_to_mirror_state;

/// Every `tests/*.rs` file is either a module above or a `[[test]]` of its own in `Cargo.toml`
/// (the crate sets `autotests = false`, so a file in neither place would silently never run).
#[test]
fn every_test_file_is_built() {
    let this = include_str!("scenarios.rs");
    let manifest = include_str!("../Cargo.toml");
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let mut missing = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        let Some(stem) = name.strip_suffix(".rs") else {
            continue;
        };
        let module = format!("\nmod {stem};\n");
        let binary = format!("path = \"tests/{name}\"");
        if stem != "scenarios" && !this.contains(&module) && !manifest.contains(&binary) {
            missing.push(name);
        }
    }
    assert!(
        missing.is_empty(),
        "test files built by nothing: {missing:?}"
    );
}
