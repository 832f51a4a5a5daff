#!/usr/bin/env bash
# Runs the whole test suite: installs the C libraries if missing, builds, tests.
set -eu
cd "$(dirname "$0")/.."
. scripts/deps.sh
swift build --build-tests
# A short crash soak first, so that swift test's own summary closes the output.
scripts/soak.sh 3 2
swift test --skip-build --parallel
