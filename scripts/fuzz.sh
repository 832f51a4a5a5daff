#!/usr/bin/env bash
# Fuzzes one target with libFuzzer for SECONDS: scripts/fuzz.sh request|config|query [SECONDS].
set -eu
# Builds Fuzz/Driver into .build-fuzz with -sanitize=fuzzer,address, runs the target named by
# ASSETFUZZ_TARGET from the committed corpus Fuzz/Corpus/TARGET (new inputs go to
# .build-fuzz/corpus/TARGET), prints the run's counts and exits non-zero on a finding, whose
# input is left in .build-fuzz/findings/: add it to Fuzz/Corpus/TARGET with its fix, so that
# CorpusReplayTests keeps it fixed.
cd "$(dirname "$0")/.."
target=${1:?usage: scripts/fuzz.sh request|config|query [SECONDS]}
seconds=${2:-60}
case $target in
request | config | query) ;;
*) echo "fuzz.sh: unknown target $target (request, config or query)" >&2; exit 2 ;;
esac
scratch=.build-fuzz
flags=(--scratch-path "$scratch" --product assetfuzz -Xswiftc -sanitize=fuzzer,address -Xswiftc -DFUZZING)
swift build "${flags[@]}" 2>&1 | grep -E "error|warning: unre|Compiling assetfuzz|Build complete" || true
bin="$(swift build "${flags[@]}" --show-bin-path)/assetfuzz"
[ -x "$bin" ] || { echo "fuzz.sh: the build failed" >&2; exit 1; }
mkdir -p "$scratch/corpus/$target" "$scratch/findings"
log="$scratch/fuzz-$target.log"
# Leak checks are off: the Swift runtime's caches live for the process and read as leaks (and
# TOMLKit leaks 85 bytes per refused file). Swift's backtracer would trip ASan after a crash.
set +e
ASAN_OPTIONS=detect_leaks=0 SWIFT_BACKTRACE=enable=no ASSETFUZZ_TARGET="$target" "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=3072 -max_len=4096 -detect_leaks=0 \
    -print_final_stats=1 -artifact_prefix="$scratch/findings/$target-" \
    "$scratch/corpus/$target" "Fuzz/Corpus/$target" >"$log" 2>&1
rc=$?
set -e
grep -E "INITED|DONE|^Done|^stat::(number_of_executed_units|average_exec_per_sec|new_units_added|peak_rss_mb)" "$log" || true
corpus=$(find "$scratch/corpus/$target" Fuzz/Corpus/"$target" -type f | wc -l)
echo "fuzz.sh: $target ran $seconds s; $corpus inputs in the corpus; log $log"
if [ "$rc" -ne 0 ]; then
    grep -E "ERROR|Fatal error|Test unit written|precondition" "$log" | head -20 >&2 || true
    echo "fuzz.sh: $target found a failure (libFuzzer exit $rc)" >&2
    exit "$rc"
fi
