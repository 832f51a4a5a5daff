#!/usr/bin/env bash
# Sets up a fresh Debian machine that has the Swift toolchain: C libraries, then a release build.
set -eu
cd "$(dirname "$0")/.."
. scripts/deps.sh
swift build -c release
echo "built: $(swift build -c release --show-bin-path)"
