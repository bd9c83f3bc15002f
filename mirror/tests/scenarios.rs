//! The crate's scenario tests, one file each beside this one, compiled as modules of one test
//! binary: one link instead of one per file keeps a clean build's `target/` small enough for CI
//! (each binary carries the whole crate and its dependencies). A test that changes process-wide
//! state (signal dispositions, resource limits, the global allocator) or that is run on its own
//! (the simulation) stays a binary of its own, listed in `Cargo.toml`; `every_test_file_is_built`
//! fails when a file under `tests/` is in neither place.

#[macro_use]
mod common;

mod a_batch_above_the_partition_fetch_limit_is_not_starved;
mod a_due_retry_whose_state_dir_went_offline_is_not_made;
mod a_failed_log_alignment_truncation_takes_the_dir_offline;
mod a_failed_start_leaves_the_topic_as_it_was;
mod a_failure_on_a_full_disk_is_retried_when_its_state_cannot_be_written;
mod a_failure_whose_state_dir_went_offline_is_failed_in_memory;
mod a_fetch_answer_naming_the_leader_is_followed_without_metadata;
mod a_fetch_answered_not_the_leader_follows_the_new_leader;
mod a_large_start_intent_is_stored_in_bounded_chunks;
mod a_leader_refresh_asked_too_soon_is_not_lost;
mod a_mirror_deleted_part_way_leaves_nothing_to_its_namesake;
mod a_mirror_topic_deleted_on_the_destination_is_released;
mod a_new_state_topic_writes_each_partition_config_once;
mod a_partition_added_to_a_paused_topic_is_paused_once_aligned;
mod a_partition_answered_with_an_error_is_fetched_again_after_a_pause;
mod a_partition_whose_leader_moves_changes_fetchers;
mod a_partition_without_a_source_leader_asks_for_one_again;
mod a_slow_source_node_holds_only_its_own_partitions;
mod a_source_below_fetch_v12_is_asked_where_its_epoch_ends;
mod a_source_leader_behind_its_metadata_epoch_is_fenced;
mod a_source_partition_of_legacy_entries_is_mirrored_byte_for_byte;
mod a_source_topic_refused_by_its_acls_is_not_deleted;
mod a_source_without_the_last_mirror_epoch_lookup;
mod a_start_crashing_part_way_is_put_back_at_restart;
mod a_start_failing_part_way_puts_its_partitions_back;
mod a_start_intent_never_touches_another_topic_of_its_name;
mod a_start_intent_puts_back_only_partitions_a_start_moves;
mod a_start_put_back_with_a_state_dir_offline_waits_for_it;
mod a_started_topic_is_fetched_without_waiting_for_a_pass;
mod a_stop_crashing_part_way_is_finished_at_restart;
mod a_truncation_to_the_source_log_start_wakes_its_long_polls;
mod an_out_of_range_lookup_does_not_hold_the_partition;
mod engine_source;
mod failover_report_fails_on_a_source_share_group;
mod failover_report_one_unreadable_group_hides_the_others;
mod group_sync_never_rewinds_a_destination_group;
mod group_sync_one_failed_commit_stops_every_group;
mod group_sync_one_unreadable_group_stops_every_group;
mod mirror_manager;
mod mirror_manager_sync;
mod partition_data_path;
mod partition_growth_races_a_stop_and_another_mirrors_start;
mod preflight;
mod recovering_an_unheld_topic_leaves_it_unclaimed;
mod state_machine;
mod stop_and_out_of_range;
mod the_fetcher_pool_copies_exactly_under_leader_moves;
mod two_mirrors_of_one_source_share_no_topic;

#[path = "../../tests/support/test_files_built.rs"]
mod test_files_built;

/// Every `tests/*.rs` file is either a module above or a `[[test]]` of its own in `Cargo.toml`
/// (the crate sets `autotests = false`, so a file in neither place would silently never run).
#[test]
fn every_test_file_is_built() {
    let missing = test_files_built::unbuilt(
        env!("CARGO_MANIFEST_DIR"),
        include_str!("scenarios.rs"),
        include_str!("../Cargo.toml"),
    );
    assert!(
        missing.is_empty(),
        "test files built by nothing: {missing:?}"
    );
}
