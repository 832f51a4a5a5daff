#!/usr/bin/env bash
# Runs the whole test suite: installs the C libraries if missing, builds, tests.
set -eu
cd "$(dirname "$0")/.."
. scripts/deps.sh
swift build --build-tests
swift test --skip-build --parallel
