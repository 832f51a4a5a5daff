#!/usr/bin/env bash
# Runs the SPEC §10 benchmarks against their SQLite C baselines: scripts/bench.sh [N] (or N=… scripts/bench.sh).
set -eu
cd "$(dirname "$0")/.."
. scripts/deps.sh
n="${1:-${N:-100000}}"
case "$n" in
    ''|*[!0-9]*) echo "usage: scripts/bench.sh [N]  (N objects per workload, default 100000)" >&2; exit 2 ;;
esac
swift build -c release --product assetbench --scratch-path .build-bench >&2
scratch="$(mktemp -d "${TMPDIR:-/tmp}/assetbench.XXXXXX")"
trap 'rm -rf "$scratch"' EXIT
trap 'exit 130' INT TERM
.build-bench/release/assetbench "$n" "$scratch"
