#!/usr/bin/env bash
# Crash soak: random writes, SIGKILL at random moments, invariants checked after each restart.
set -eu
cd "$(dirname "$0")/.."
# Usage: scripts/soak.sh [KILLS] [SECONDS]; the binaries are $ASSETD_BIN (a folder, or assetd
# itself), by default the debug build, which is built first if it is not there.
KILLS="${1:-10}"
SECONDS_PER_KILL="${2:-2}"
BIN="${ASSETD_BIN:-.build/debug}"
[ -f "$BIN" ] && BIN="$(dirname "$BIN")"
if [ ! -x "$BIN/assetd" ] || [ ! -x "$BIN/assetctl" ]; then
    [ -n "${ASSETD_BIN:-}" ] && { echo "soak: no assetd and assetctl in $BIN" >&2; exit 1; }
    swift build
fi
ASSETD_BIN="$BIN" exec python3 scripts/soak.py "$KILLS" "$SECONDS_PER_KILL"
