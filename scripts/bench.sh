#!/usr/bin/env bash
# Runs the benchmarks against their baselines: scripts/bench.sh [N] [PART...] (or N=… scripts/bench.sh).
#   store   the engine against its SQLite C baselines, N objects per workload
#   socket  object.get and durable object.put over assetd's socket, 50 clients, against
#           redis-server on a Unix socket driven by redis-benchmark -c 50 (installed with
#           apt-get if missing), in SOCKET_ROUNDS rounds (default 3) with the order rotated,
#           each ratio the median of the rounds' own: N gets a round over N stored objects
#           (in four turns alternating with the GETs);
#           up to PUT_N puts in all (default N/2) within PUT_SECONDS in all (default 60), from
#           100 owners in turn, against SET on a second redis-server with --appendonly yes
#           --appendfsync always (its files on the scratch folder's disk; if that is tmpfs,
#           below .build-bench instead), and against the plain one for information; the same
#           puts from one owner (information); up to TOUCH_N a round (default PUT_N)
#           object.get with touch and as many object.touch of random stored keys, each within
#           TOUCH_SECONDS in all (default PUT_SECONDS), against the plain gets of the same
#           round, and as many touching gets of Zipf-distributed keys (alpha 0.9,
#           information); then, for information, the same puts through Store.write
#           in-process, 25 per commit (about the daemon's batch), durability full and normal,
#           and the same puts on SQLite's C API, one commit and sync for as many puts as the
#           daemon's WAL syncs covered in this run, synchronous = FULL (assetbench put-baseline,
#           one run after the rounds), against the durable socket puts
#   scan    ping p99 while 2 clients run full-scan aggregates over M objects (default
#           1000000) for SCAN_SECONDS (default 5)
#   footprint  assetd on the same M objects: exec to READY=1 on a first start (page cache
#           dropped when possible) and a restart; RssAnon/RssFile at ready and after a workload
#   expire  Store.expire by age + Store.sweep over EXPIRE_M registered files (default
#           1000000, 10% old) against find -mmin +60 -delete over an identical tree, warm,
#           and cold when /proc/sys/vm/drop_caches is writable (EXPIRE_COLD=no skips it)
#   hostile  scripts/hostile.sh against the release assetd: slow queries, big and pipelined
#           puts, puts of number arrays from 128 clients, big replies, huge aggregates, four
#           hostile clients at once; RSS peak/after
#           and the bystanders' ping p99 against the goals of docs/PERFORMANCE.md (HOSTILE_SCALE, default 1)
#   eviction  byte miss ratios of order = lru, s3fifo and sieve (Store.enforce after every
#           request of a trace) against libCacheSim's LRU, S3-FIFO and SIEVE (PyPI libcachesim,
#           installed into a private venv below .build-bench) on Zipf 0.6-1.2, scans and
#           one-hit traces at 1/5/10% budgets, and objects evicted per second of one
#           enforcement per order (scripts/eviction_bench.py; EVICTION_REQUESTS,
#           EVICTION_OBJECTS, EVICTION_COST_OBJECTS, EVICTION_COST_ROUNDS)
# Default: all seven. The report opens with the date (UTC), the commit (-dirty if the tree has
# changes) and the machine (cores, CPU model, kernel, file system of the scratch folder):
# every ratio in it comes from this one run.
# CLIENT=uv|poll|threads picks the socket load generator (default uv: one thread on libuv's
# epoll loop, like redis-benchmark's; poll, one thread polling all 50 connections, pays a
# system call over every connection per wake-up); UV_THREADPOOL_SIZE, if set, is passed on
# to assetd.
set -eu
cd "$(dirname "$0")/.."
. scripts/deps.sh
usage() { echo "usage: scripts/bench.sh [N] [store|socket|scan|footprint|expire|hostile|eviction ...]  (N objects per workload, default 100000)" >&2; exit 2; }
n="${N:-100000}"
case "${1:-}" in
    [0-9]*) n="$1"; shift ;;
esac
case "$n" in ''|*[!0-9]*) usage ;; esac
parts="${*:-store socket scan footprint expire hostile eviction}"
for p in $parts; do
    case "$p" in store|socket|scan|footprint|expire|hostile|eviction) ;; *) echo "unknown part: $p (store, socket, scan, footprint, expire, hostile or eviction)" >&2; usage ;; esac
done
has() { case " $parts " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
m="${M:-1000000}"
put_n="${PUT_N:-$((n / 2))}"
put_seconds="${PUT_SECONDS:-60}"
touch_n="${TOUCH_N:-$put_n}"
touch_seconds="${TOUCH_SECONDS:-$put_seconds}"
socket_rounds="${SOCKET_ROUNDS:-3}"
scan_seconds="${SCAN_SECONDS:-5}"
expire_m="${EXPIRE_M:-1000000}"
expire_cold="${EXPIRE_COLD:-auto}"
client="${CLIENT:-uv}"
for v in "$m" "$put_n" "$put_seconds" "$touch_n" "$touch_seconds" "$socket_rounds" "$scan_seconds" "$expire_m"; do
    case "$v" in ''|*[!0-9]*) echo "M, PUT_N, PUT_SECONDS, TOUCH_N, TOUCH_SECONDS, SOCKET_ROUNDS, SCAN_SECONDS and EXPIRE_M are whole numbers" >&2; exit 2 ;; esac
done

swift build -c release --product assetbench --scratch-path .build-bench >&2
if has socket || has scan || has footprint || has hostile; then
    swift build -c release --product assetd --scratch-path .build-bench >&2
fi
bench=.build-bench/release/assetbench
scratch="$(mktemp -d "${TMPDIR:-/tmp}/assetbench.XXXXXX")"
assetd_pid=""
redis_pid=""
durable_pid=""
durable_dir=""
cleanup() {
    local status=$?
    # A part that failed while its assetd ran: the log goes with the scratch folder, so show it
    # (stop_assetd shows it itself when assetd exits badly, and clears assetd_pid).
    if [ "$status" -ne 0 ] && [ -n "$assetd_pid" ] && [ -s "$scratch/assetd.log" ]; then
        echo "assetd's log (the last 50 lines):" >&2
        tail -n 50 "$scratch/assetd.log" >&2
    fi
    [ -n "$assetd_pid" ] && kill -TERM "$assetd_pid" 2>/dev/null && wait "$assetd_pid" 2>/dev/null
    [ -n "$redis_pid" ] && kill -TERM "$redis_pid" 2>/dev/null && wait "$redis_pid" 2>/dev/null
    [ -n "$durable_pid" ] && kill -TERM "$durable_pid" 2>/dev/null && wait "$durable_pid" 2>/dev/null
    [ -n "$durable_dir" ] && rm -rf "$durable_dir"
    rm -rf "$scratch"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
start=$SECONDS

# The file system a folder is on: type, device, mount point.
fs_of() {
    if command -v findmnt >/dev/null; then findmnt -n -o FSTYPE,SOURCE,TARGET -T "$1" | head -n 1
    else df --output=fstype "$1" | tail -n 1; fi
}
commit="$(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
[ -z "$(git status --porcelain 2>/dev/null)" ] || commit="$commit-dirty"
cpu_model="$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)"
echo "bench: $(date -u '+%Y-%m-%d %H:%M:%S UTC'); commit $commit; $(nproc) cores, ${cpu_model:-unknown CPU}," \
    "kernel $(uname -r); scratch $scratch on $(fs_of "$scratch"); parts: $parts"

# The configuration of an assetd on the database in $scratch/$1, durability full.
write_config() {
    local dir="$scratch/$1"
    mkdir -p "$dir/files"
    cat >"$dir/assetd.toml" <<EOF
[store]
path = "$dir/assetd.sqlite"
durability = "full"

[control]
socket = "$dir/control.sock"
max_connections = 256

[files]
roots = ["$dir/files"]

[log]
level = "warning"
EOF
}

# assetd on the database in $scratch/$1 (made by `assetbench populate`).
start_assetd() {
    local dir="$scratch/$1"
    write_config "$1"
    .build-bench/release/assetd --config "$dir/assetd.toml" 2>>"$scratch/assetd.log" &
    assetd_pid=$!
    "$bench" wait "$dir/control.sock" 120
}

stop_assetd() {
    kill -TERM "$assetd_pid"
    local status=0
    wait "$assetd_pid" || status=$?
    assetd_pid=""
    if [ "$status" -ne 0 ]; then
        echo "assetd exited with $status:" >&2
        cat "$scratch/assetd.log" >&2
        return 1
    fi
}

if has store; then
    "$bench" "$n" "$scratch"
fi

if has socket; then
    if ! command -v redis-server >/dev/null || ! command -v redis-benchmark >/dev/null; then
        echo "installing: redis-server" >&2
        sudo_cmd=""
        [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
        $sudo_cmd apt-get update -qq
        $sudo_cmd env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >&2
    fi
    # Waits for the redis-server on socket $1 (log $2) to answer.
    wait_redis() {
        for _ in $(seq 100); do
            [ "$(redis-cli -s "$1" ping 2>/dev/null)" = PONG ] && return 0
            sleep 0.1
        done
        cat "$2" >&2
        return 1
    }
    redis-server --port 0 --unixsocket "$scratch/redis.sock" --unixsocketperm 700 --save '' --appendonly no \
        --dir "$scratch" --daemonize no --loglevel warning >"$scratch/redis.log" 2>&1 &
    redis_pid=$!
    wait_redis "$scratch/redis.sock" "$scratch/redis.log"
    # The durable peer appends every write and fsyncs before answering. Its files go where
    # assetd's database goes, unless that is in memory, where an fsync costs nothing and the
    # baseline would be flattered: then on the disk below .build-bench.
    case "$(df --output=fstype "$scratch" | tail -n 1)" in
        tmpfs|ramfs)
            durable_dir="$(mktemp -d "$PWD/.build-bench/redis-durable.XXXXXX")"
            echo "[bench] socket: the scratch folder is in memory; the durable redis-server writes to $durable_dir" >&2 ;;
        *) durable_dir="$scratch/redis-durable"; mkdir -p "$durable_dir" ;;
    esac
    redis-server --port 0 --unixsocket "$scratch/redis-durable.sock" --unixsocketperm 700 --save '' \
        --appendonly yes --appendfsync always --dir "$durable_dir" --daemonize no --loglevel warning \
        >"$scratch/redis-durable.log" 2>&1 &
    durable_pid=$!
    wait_redis "$scratch/redis-durable.sock" "$scratch/redis-durable.log"

    echo "[bench] socket: storing $n objects for the gets" >&2
    "$bench" populate "$scratch/socket/assetd.sqlite" "$scratch/socket/files" "$n"
    start_assetd socket
    "$bench" socket --socket "$scratch/socket/control.sock" --redis "$scratch/redis.sock" --keys "$n" --n "$n" \
        --put-n "$put_n" --put-seconds "$put_seconds" --touch-n "$touch_n" --touch-seconds "$touch_seconds" \
        --rounds "$socket_rounds" --driver "$client" --probe-folder "$scratch/socket" --daemon-pid "$assetd_pid" --redis-pid "$redis_pid" \
        --redis-durable "$scratch/redis-durable.sock" --redis-durable-pid "$durable_pid" \
        --redis-durable-folder "$durable_dir" --put-batch-file "$scratch/put-batch"
    stop_assetd
    rm -rf "$scratch/socket"
    # The same puts without the socket or the daemon's pipeline (information).
    "$bench" populate "$scratch/ceiling/assetd.sqlite" "$scratch/ceiling/files" "$n"
    # The durable puts' work on SQLite's C API, one commit a sync of as many puts as each of
    # the daemon's WAL syncs covered in this run (information): on a copy of the same
    # database, made before the engine's puts below.
    for f in assetd.sqlite assetd.sqlite-wal; do
        [ ! -e "$scratch/ceiling/$f" ] || cp "$scratch/ceiling/$f" "$scratch/ceiling/c-$f"
    done
    read -r put_group put_rate put_batch <"$scratch/put-batch"
    "$bench" put-baseline "$scratch/ceiling/c-assetd.sqlite" "$put_n" "$put_group" "$put_rate" "$put_batch"
    "$bench" put-ceiling "$scratch/ceiling/assetd.sqlite" "$scratch/ceiling/files" "$put_n" 25
    rm -rf "$scratch/ceiling"
    kill -TERM "$redis_pid" "$durable_pid"
    wait "$redis_pid" || true
    wait "$durable_pid" || true
    redis_pid=""
    durable_pid=""
    rm -rf "$durable_dir"
    durable_dir=""
fi

# scan and footprint share one database of M objects.
if has scan || has footprint; then
    echo "[bench] scan/footprint: storing $m objects" >&2
    "$bench" populate "$scratch/big/assetd.sqlite" "$scratch/big/files" "$m" --explain
fi

if has scan; then
    start_assetd big
    "$bench" ping-scan --socket "$scratch/big/control.sock" --objects "$m" --seconds "$scan_seconds" \
        --daemon-pid "$assetd_pid"
    stop_assetd
fi

if has footprint; then
    write_config big
    # assetbench starts assetd itself (twice), so it can time exec to READY=1.
    "$bench" footprint --assetd .build-bench/release/assetd --config "$scratch/big/assetd.toml" \
        --socket "$scratch/big/control.sock" --objects "$m"
fi
rm -rf "$scratch/big"

if has expire; then
    "$bench" expire --folder "$scratch/expire" --files "$expire_m" --cold "$expire_cold"
    rm -rf "$scratch/expire"
fi
if has hostile; then
    # Reports MET/MISSED per case; a miss is reported, not fatal to the other parts.
    # hostile.sh exits 3 for a miss and anything else non-zero for a run that failed.
    hostile_status=0
    ASSETD=.build-bench/release/assetd scripts/hostile.sh --scale "${HOSTILE_SCALE:-1}" || hostile_status=$?
    case "$hostile_status" in
        0) ;;
        3) echo "hostile: some targets MISSED" ;;
        *) echo "hostile: the run failed (exit $hostile_status)" >&2; failed=1 ;;
    esac
fi
if has eviction; then
    # libCacheSim's reference implementations, pinned, in a venv of their own.
    venv=.build-bench/eviction-venv
    if ! "$venv/bin/python" -c "import libcachesim" 2>/dev/null; then
        python3 -m venv "$venv" >&2 || { apt-get install -y python3-venv >&2 && python3 -m venv "$venv" >&2; }
        "$venv/bin/pip" install -q libcachesim==0.3.5 >&2
    fi
    # A miss is reported on stdout; a failure (a crash, a failed replay) fails the script.
    "$venv/bin/python" scripts/eviction_bench.py "$bench" "$scratch/eviction" \
        || { echo "eviction: the bench failed" >&2; failed=1; }
    rm -rf "$scratch/eviction"
fi
echo "bench total $((SECONDS - start))s ($parts)"
exit "${failed:-0}"
