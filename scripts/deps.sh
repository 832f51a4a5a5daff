#!/usr/bin/env bash
# Sourced by the other scripts: installs libuv1-dev, libsqlite3-dev, mandoc (for
# scripts/lint.sh), socat and python3 (docs/PROTOCOL.md's examples, which the tests run) and
# lintian (scripts/test.sh checks the package) with apt-get if missing.
set -eu
missing=""
for pkg in libuv1-dev libsqlite3-dev pkg-config mandoc socat python3 lintian; do
    dpkg -s "$pkg" >/dev/null 2>&1 || missing="$missing $pkg"
done
if [ -n "$missing" ]; then
    echo "installing:$missing" >&2
    sudo_cmd=""
    [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
    $sudo_cmd apt-get update -qq
    $sudo_cmd env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >&2
fi
command -v swift >/dev/null || { echo "swift is not on PATH (expected the Swift 6 toolchain)" >&2; exit 1; }
