#!/usr/bin/env bash
# Runs the whole test suite: installs the C libraries if missing, lints, builds, tests.
set -eu

usage() {
    cat <<'USAGE'
usage: scripts/test.sh [--tsan]

With no option: lints (scripts/lint.sh), builds, runs a short crash soak, then the whole
suite in parallel.

  --tsan  builds with ThreadSanitizer into .build-tsan and runs the daemon tests (the put
          pipeline and group commit among them) and the event loop tests under it; the
          assetd and assetctl they start are sanitized too. Each process writes its reports
          to .build-tsan/reports; any report fails the run. Several times slower than a
          plain run, and a build of its own (about as long as the first plain build).
USAGE
}

tsan=false
case "${1:-}" in
    "") ;;
    --tsan) tsan=true ;;
    -h | --help) usage; exit 0 ;;
    *) usage >&2; exit 64 ;;
esac

cd "$(dirname "$0")/.."
. scripts/deps.sh

if $tsan; then
    build=.build-tsan
    reports=$PWD/$build/reports
    swift build --build-tests --sanitize=thread --build-path "$build"
    # Lets TSan see Synchronization's Mutex wait for a lock (why: the file's head comment).
    clang -shared -fPIC -O1 -Wall -o "$build/libtsan-mutex.so" scripts/tsan-mutex.c
    rm -rf "$reports"
    mkdir -p "$reports"
    chmod 1777 "$reports"  # the tests that act as nobody run sanitized assetctl too
    status=0
    LD_PRELOAD="$PWD/$build/libtsan-mutex.so" \
        TSAN_OPTIONS="log_path=$reports/tsan second_deadlock_stack=1" \
        swift test --skip-build --sanitize=thread --build-path "$build" \
        --filter '^(DaemonTests|EventLoopTests)\.' || status=$?
    if [ -n "$(ls "$reports")" ]; then
        cat "$reports"/* >&2
        echo "ThreadSanitizer: $(cat "$reports"/* | grep -c '^WARNING: ThreadSanitizer') reports from" \
            "$(ls "$reports" | wc -l) processes (in $reports)" >&2
        exit 1
    fi
    exit $status
fi

scripts/lint.sh
swift build --build-tests
# A short crash soak first, so that swift test's own summary closes the output.
scripts/soak.sh 3 2
swift test --skip-build --parallel
