#!/usr/bin/env bash
# Runs every fuzz target for a short smoke period (default 20 s each; first argument overrides).
#
# cargo-fuzz wants a nightly toolchain for its sanitizer flags; this machine has only stable, so
# the targets are built the way cargo-fuzz builds them minus the sanitizer: libFuzzer (from the
# libfuzzer-sys crate) with LLVM's SanitizerCoverage passes, which are stable codegen options,
# `--cfg fuzzing`, debug assertions and overflow checks on. Panics, aborts, timeouts (a single
# input over 10 s) and allocations over 2 GiB fail the run; a crashing input is saved under
# fuzz/artifacts/<target>/ and printed. The corpus grows in fuzz/corpus/<target>/ (not committed).
#
#   bash scripts/fuzz-smoke.sh [SECONDS_PER_TARGET] [TARGET...]
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-20}"
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=(batch_parser request_decode index_files snapshot_checkpoint mirror_state)
fi
export RUSTFLAGS="--cfg fuzzing -Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
-Cllvm-args=-sanitizer-coverage-trace-compares -Cdebug-assertions -Coverflow-checks"
target_dir=fuzz/target/smoke
# An explicit --target keeps RUSTFLAGS off build scripts and proc macros (host code).
triple="$(rustc -vV | sed -n 's/^host: //p')"
cargo build --quiet --release --manifest-path fuzz/Cargo.toml --target-dir "$target_dir" \
  --target "$triple" $(printf -- '--bin %s ' "${targets[@]}")
for t in "${targets[@]}"; do
  mkdir -p "fuzz/corpus/$t" "fuzz/artifacts/$t"
  echo "fuzz $t: ${secs}s"
  "$target_dir/$triple/release/$t" "fuzz/corpus/$t" -max_total_time="$secs" -timeout=10 \
    -rss_limit_mb=2048 -malloc_limit_mb=2048 -artifact_prefix="fuzz/artifacts/$t/" \
    -print_final_stats=1 2>&1 | grep -E "^(stat::number_of_executed_units|stat::peak_rss_mb|==|SUMMARY|ERROR|Test unit written)|panicked" || true
  if ls "fuzz/artifacts/$t"/* >/dev/null 2>&1; then
    echo "fuzz $t FAILED: crashing inputs in fuzz/artifacts/$t/" >&2
    exit 1
  fi
done
echo "fuzz smoke: ${#targets[@]} targets, ${secs}s each, no crash"
