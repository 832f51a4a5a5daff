#!/usr/bin/env bash
# Sets up a fresh Debian machine that has the Swift toolchain (C libraries, release build),
# then runs assetd in the foreground on its embedded defaults (pass --no-run to only build).
set -eu
cd "$(dirname "$0")/.."
. scripts/deps.sh
# One product per call: given --product twice, swift build builds only the last one.
swift build -c release --product assetd
swift build -c release --product assetctl
bin="$(swift build -c release --show-bin-path)"
echo "built: $bin/assetd $bin/assetctl" >&2
[ "${1:-}" = "--no-run" ] && exit 0
exec "$bin/assetd"
