//! The crate's scenario tests, one file each beside this one, compiled as modules of one test
//! binary: one link instead of one per file keeps a clean build's `target/` small enough for CI
//! (each binary carries the whole crate and its dependencies). A test that changes process-wide
//! state (signal dispositions, resource limits, the global allocator) or that is run on its own
//! (the simulation) stays a binary of its own, listed in `Cargo.toml`; `every_test_file_is_built`
//! fails when a file under `tests/` is in neither place.

mod common;

mod a_batch_the_cleaner_emptied_is_recovered_with_its_producer;
mod a_clean_close_leaves_the_active_indexes_as_kafka;
mod a_client_batch_flagged_log_append_time_is_taken_as_kafka;
mod a_client_batch_is_checked_in_kafkas_order;
mod a_client_batch_whose_records_do_not_match_its_count_is_an_invalid_record;
mod a_client_batch_with_gapped_offset_deltas_is_taken_as_kafka;
mod a_control_record_that_does_not_parse_truncates_recovery;
mod a_corrupt_batch_below_the_recovery_point_does_not_fail_the_open;
mod a_crash_before_a_new_partition_dir_is_durable_does_not_block_the_start;
mod a_crash_in_create_never_leaves_the_default_config;
mod a_deleted_partition_stays_deleted_after_a_crash;
mod a_deleted_partitions_directory_stays_for_file_delete_delay;
mod a_deleted_segments_producer_snapshot_stays_renamed_for_file_delete_delay;
mod a_failed_checkpoint_takes_only_its_dir_offline;
mod a_failed_dir_at_shutdown_leaves_the_others_clean;
mod a_failed_epoch_checkpoint_sync_takes_the_dir_offline;
mod a_failed_removal_of_a_deleted_partition_takes_its_dir_offline;
mod a_failed_retention_deletion_keeps_the_log_consistent_and_fails_it;
mod a_failed_seal_at_a_roll_keeps_the_segment_and_fails_the_log;
mod a_failed_truncation_takes_the_dir_offline;
mod a_failed_txn_index_sync_takes_the_dir_offline;
mod a_failed_txn_index_write_takes_the_dir_offline;
mod a_flush_after_a_failed_group_commit_sync_fails_too;
mod a_full_disk_at_a_new_epoch_appends_nothing;
mod a_garbled_epoch_checkpoint_or_partition_metadata_takes_only_its_dir_offline;
mod a_kafka_written_data_dir_opens;
mod a_log_of_legacy_entries_opens_keeps_them_and_appends_v2;
mod a_log_opened_on_a_new_directory_survives_a_crash;
mod a_log_without_segments_keeps_the_epoch_below_its_log_start;
mod a_new_data_dir_survives_a_crash;
mod a_new_partition_has_an_empty_epoch_checkpoint;
mod a_partition_without_metadata_gets_its_topics_id;
mod a_read_with_no_byte_left_reports_only_aborts_at_its_start;
mod a_recovery_truncation_is_logged_as_a_warning;
mod a_replica_takes_legacy_entries_its_source_serves;
mod a_roll_past_a_gap_snapshots_at_the_new_segment_base;
mod a_snapshot_a_truncation_removed_is_not_trusted_after_a_crash;
mod a_snapshot_at_a_full_truncations_start_is_not_loaded_after_a_crash;
mod a_truncation_into_a_sealed_segment_keeps_its_roll_clock;
mod a_truncation_that_empties_the_active_segment_restarts_its_roll_clock;
mod a_txn_index_entry_past_the_log_is_rebuilt_not_a_panic;
mod a_txn_index_failure_at_load_takes_only_its_dir_offline;
mod an_eio_reading_the_log_start_checkpoint_takes_the_dir_offline;
mod an_offline_dirs_reason_names_the_os_error;
mod an_unreadable_snapshot_is_kept_and_fails_the_open;
mod an_unverified_batch_at_a_newer_epoch_does_not_join_the_open_transaction;
mod attribute_bits_kafka_defines_none_of_are_appended;
mod clean_shutdown_marker_lives_in_the_storage;
mod client_append_validation;
mod concurrent_checkpoints_share_one_tmp_file;
mod corrupt_middle_batch;
mod corrupt_offset_checkpoint_blocks_startup;
mod crash_mid_create_blocks_startup;
mod delete_long_topic_name;
mod delete_records_leaves_segments_to_the_next_retention_check;
mod delete_rename_failure;
mod deleted_indexes;
mod deleted_partition_resurrects_on_sim_storage;
mod deleted_segments_stay_renamed_for_file_delete_delay;
mod dir_offline_at_load_keeps_clean_marker;
mod direct_io_mode;
mod duplicate_partition_dirs_silently_shadowed;
mod duplicate_produce_retried;
mod durable_wait_after_truncation;
mod each_data_dir_has_its_own_recovery_threads;
mod empty_cleanup_policy_retains_everything;
mod epoch_cache;
mod flush_messages_counts_offsets_as_kafka;
mod garbled_hw_checkpoint_fails_every_dir;
mod group_commit;
mod incomplete_split_swap_overlaps_segment;
mod leader_epoch_checkpoint_lives_in_the_log_storage;
mod load_dir_io_error_fails_every_dir;
mod load_io_error_fails_every_dir;
mod log_basics;
mod log_dir_offline;
mod log_manager;
mod log_start_above_recovered_end_reuses_offsets;
mod log_start_lowered_by_truncation_survives_crash;
mod log_start_of_a_deleted_partition_outlives_a_failed_removal;
mod lso_interleaved_transactions;
mod maintain_racing_delete_takes_dir_offline;
mod missing_snapshot;
mod offline_partition_recreated_in_another_dir;
mod offset_checkpoints_live_in_the_data_dir_storage;
mod opening_an_empty_log_does_not_write_its_epoch_checkpoint;
mod partition_metadata_and_topic_config_live_in_the_storage;
mod producer_snapshots_live_in_the_log_storage;
mod read_committed_aborted_txns_bounded_by_lso_not_fetch;
mod read_committed_aborts_past_the_lso_reach_the_fetch_bound;
mod rebuilt_index_skips_producer_replay;
mod replica_run_index_full;
mod retention_deletes_segments_without_timestamps;
mod retention_rolls_an_expired_active_segment_and_deletes_it;
mod retention_runs_at_the_retention_check_interval;
mod retention_time_only;
mod swap_completion_keeps_stale_indexes;
mod swap_segment_deleted_on_open;
mod the_embedding_example_runs_again_on_its_data_dir;
mod the_kafka_metadata_log_is_not_loaded;
mod the_smallest_accepted_segment_index_bytes_takes_appends;
mod topic_config_written_into_offline_dir;
mod torn_tail;
mod truncate_mid_transaction;
mod truncated_middle_segment_leaves_stale_active;
mod unclean_shutdown_open_transactions;
mod unsynced_active_indexes;
mod unverified_transactional_append;

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
