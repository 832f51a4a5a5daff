#!/usr/bin/env bash
# Hostile clients against assetd, measured (docs/PERFORMANCE.md's goals: RSS <= 100 MiB after one
# client's work, <= 300 MiB with four at once, ping p99 <= 100 ms): scripts/hostile.sh
# [--scale F] [CASE...]. ASSETD=path picks the daemon (default .build/debug/assetd; bench.sh
# passes its release build). Prints each case's RSS idle/peak/after and the bystanders' p99
# with MET or MISSED; exits 3 if any target was missed, 1 if a case failed (a traceback).
set -eu
cd "$(dirname "$0")/.."
exec python3 scripts/hostile.py "$@"
