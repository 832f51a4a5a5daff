#!/usr/bin/env python3
"""Every eviction order libCacheSim ships, against its LRU, on scripts/eviction_bench.py's traces.

Usage: eviction_alternatives.py [breadth]
       eviction_alternatives.py seeds [SEEDS] NAME ...
       eviction_alternatives.py shifting NAME ...
       eviction_alternatives.py list

NAME is one of ORDERS ("list" prints them) or a setting: "mq:LIFETIME:QOUT", "2q:AIN:AOUT",
"wtinylfu:WINDOW[:MAIN]", "s3fifo-lib:SMALL:GHOST", "caffeine:WINDOW:SAMPLE" (Caffeine's
W-TinyLFU, scripts/eviction_tinylfu.py), "s3mq:LIFETIME:HISTORY" (S3-FIFO with MQ as its main
queue, scripts/eviction_s3mq.py).

Run with the eviction bench's virtual environment (.build-bench/eviction-venv/bin/python).
Each order gets the bench's requests one at a time at the bench's byte capacities, as the
bench's reference column does (libCacheSim's `get`, which inserts on a miss and evicts to make
room), and is judged by its byte miss ratio over libCacheSim's LRU on the same trace.

"breadth" (the default) replays the bench's own seeds, 21 rows, through every order in ORDERS
and prints each ratio, then per order: how many of the eight Zipf 0.8-1.2 rows an online order
can reach (Zipf 0.8 at 1% left out; see docs/EVICTION.md) miss 0.85x LRU, and its worst row
against LRU in points. "seeds" replays SEEDS (default 20) seeds of the nine Zipf rows (the
bench's own and SEEDS - 1 others, as scripts/eviction_seeds.py draws them) through the orders
named, and every row of the other kinds too when SEEDS is given as "all:SEEDS". "shifting"
replays scripts/eviction_seeds.py's Zipf traces whose popularity moves every quarter.
"""

import os
import signal
import statistics
import sys

import libcachesim as lcs
from libcachesim import libcachesim_python as native

import eviction_bench as eb
import eviction_model
import eviction_s3mq
import eviction_seeds as es
import eviction_tinylfu


class Native(lcs.CacheBase):
    """An order libCacheSim builds but its Python package does not wrap."""

    def __init__(self, init, capacity, params=None):
        common = lcs.CommonCacheParams(cache_size=capacity, default_ttl=86400 * 300, hashpower=24,
                                       consider_obj_metadata=False)
        super().__init__(_cache=init(common, params) if params is not None else init(common))


class Model:
    """A Python order: scripts/eviction_model.py's S3-FIFO (the store's, with its large-object
    rule) unless another class is given."""

    def __init__(self, capacity, kind=eviction_model.S3FIFO, **kw):
        self.cache = kind(capacity, **kw)

    def get(self, request):
        return self.cache.get(request.obj_id, request.obj_size)


def lru_bloom(c):
    return lcs.LRU(c, admissioner=lcs.BloomFilterAdmissioner())


# name -> factory(capacity). Learned orders (LRB, GLCache, 3L-Cache) and the offline ones
# (Belady) are not candidates for a default and are left out.
ORDERS = {
    "lru": lcs.LRU,
    "fifo": lcs.FIFO,
    "clock": lcs.Clock,
    "clock-2bit": lambda c: lcs.Clock(c, n_bit_counter=2),
    "sieve": lcs.Sieve,
    "s3fifo-lib": lcs.S3FIFO,
    "s3fifo-store": Model,  # the store's setting: 5%, 50%, keys capped
    "s3fifo-10/90": lambda c: Model(c, small_ratio=0.1, ghost_ratio=0.9, cap_keys=False),  # before 2026-11-27
    "s3fifo-5/50-cap": lambda c: Model(c, small_ratio=0.05, ghost_ratio=0.5, cap_keys=True),
    "s3fifod": lambda c: Native(native.S3FIFOd_init, c, ""),
    "qdlp": lambda c: Native(native.QDLP_init, c, ""),
    "clock2q+": lcs.Clock2QPlus,
    "arc": lcs.ARC,
    "car": lambda c: Native(native.CAR_init, c, ""),
    "lirs": lcs.LIRS,
    "2q": lcs.TwoQ,
    "slru": lcs.SLRU,
    "mq": lcs.MQ,
    "lru-2": lcs.LRUK,
    "lru+bloom": lru_bloom,
    "lfu": lcs.LFU,
    "lfuda": lcs.LFUDA,
    "gdsf": lcs.GDSF,
    "lhd": lcs.LHD,
    "hyperbolic": lcs.Hyperbolic,
    "lecar": lcs.LeCaR,
    "cacheus": lcs.Cacheus,
    "clockpro": lcs.ClockPro,
    "wtinylfu-1%": lcs.WTinyLFU,
    "wtinylfu-10%": lambda c: lcs.WTinyLFU(c, window_size=0.1),
    "wtinylfu-20%": lambda c: lcs.WTinyLFU(c, window_size=0.2),
    "wtinylfu-1%-lru": lambda c: lcs.WTinyLFU(c, main_cache="LRU"),
    "wtinylfu-10%-sieve": lambda c: lcs.WTinyLFU(c, main_cache="SIEVE", window_size=0.1),
    "caffeine-1%": lambda c: Model(c, eviction_tinylfu.WTinyLFU),
    "caffeine-10%": lambda c: Model(c, eviction_tinylfu.WTinyLFU, window=0.1),
}
ZIPF = ("zipf-0.8", "zipf-1.0", "zipf-1.2")
FEASIBLE = [(n, b) for n in ZIPF for b in eb.BUDGETS if (n, b) != ("zipf-0.8", 0.01)]


def parametrised(name):
    """"wtinylfu:W:MAIN", "2q:AIN:AOUT", "s3fifo-lib:SMALL:GHOST" or a name in ORDERS."""
    kind, *args = name.split(":")
    if not args:
        return ORDERS[name]
    if kind == "wtinylfu":
        return lambda c: lcs.WTinyLFU(c, window_size=float(args[0]), main_cache=args[1] if len(args) > 1 else "SLRU")
    if kind == "2q":
        return lambda c: lcs.TwoQ(c, a_in_size_ratio=float(args[0]), a_out_size_ratio=float(args[1]))
    if kind == "s3fifo-lib":
        return lambda c: lcs.S3FIFO(c, small_size_ratio=float(args[0]), ghost_size_ratio=float(args[1]))
    if kind == "caffeine":
        return lambda c: Model(c, eviction_tinylfu.WTinyLFU, window=float(args[0]), sample=int(args[1]))
    if kind == "s3mq":
        return lambda c: Model(c, eviction_s3mq.S3MQ, lifetime=int(args[0]), history=float(args[1]))
    if kind == "mq":
        return lambda c: lcs.MQ(c, lifetime=int(args[0]), qout_size_ratio=float(args[1]))
    raise SystemExit(f"unknown order {name}")


def replay(make, capacity, requests):
    cache = make(capacity)
    missed = total = 0
    for r in requests:
        total += r.obj_size
        if not cache.get(r):
            missed += r.obj_size
    return missed / total


def guarded(name, jobs, timeout=60):
    """replay() of each (capacity, requests) in a child process: libCacheSim's LFUDA never
    returns on the bench's first row, and an order that crashes takes only its child. A row
    that does not finish within timeout seconds is None, and so is every row after it."""
    results = []
    while len(results) < len(jobs):
        start = len(results)
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            signal.signal(signal.SIGALRM, signal.SIG_DFL)
            for capacity, requests in jobs[start:]:
                signal.alarm(timeout)
                os.write(w, f"{replay(parametrised(name), capacity, requests)!r}\n".encode())
            os._exit(0)
        os.close(w)
        with os.fdopen(r) as f:
            results += [float(x) for x in f.read().split()]
        os.waitpid(pid, 0)
        if len(results) < len(jobs):
            results += [None] * (len(jobs) - len(results))
    return results


def requests_of(trace):
    out = []
    for i, s in trace:
        r = lcs.Request()
        r.obj_id, r.obj_size = i + 1, s
        out.append(r)
    return out


def summary(ratio, lru, keys):
    """Feasible Zipf rows over 0.85x, and the worst row against LRU in points (key, points)."""
    over = sum(1 for k in keys if k[:2] in FEASIBLE and ratio[k] > 0.85)
    worst = max(keys, key=lambda k: (ratio[k] - 1) * lru[k])
    return over, worst, (ratio[worst] - 1) * lru[worst] * 100


def fmt(x, width):
    return f"{x:>{width}.3f}" if x is not None else f"{'-':>{width}}"


def width(names):
    return max(8, *(len(n) + 1 for n in names))


def breadth(names):
    rows = []
    for name, make in eb.TRACES:
        trace = make()
        requests = requests_of(trace)
        distinct = sum(dict(trace).values())
        for b in eb.BUDGETS:
            rows.append(((name, b), int(distinct * b), requests))
    lru = {key: replay(lcs.LRU, capacity, requests) for key, capacity, requests in rows}
    ratio = {}
    for n in names:
        got = guarded(n, [(capacity, requests) for _, capacity, requests in rows])
        ratio[n] = {key: None if v is None else v / lru[key] for (key, _, _), v in zip(rows, got)}
        print(f"{n} done", file=sys.stderr, flush=True)
    print("byte miss ratio / LRU's, bench seeds; '-': did not finish in a minute or crashed")
    w = width(names)
    print(f"{'trace':<16}{'budget':>7}{'lru':>8}" + "".join(f"{n:>{w}}" for n in names))
    for key, _, _ in rows:
        print(f"{key[0]:<16}{int(key[1] * 100):>6}%{lru[key]:>8.4f}" + "".join(fmt(ratio[n][key], w) for n in names))
    print("per order: feasible Zipf rows (8) mean and count over 0.85x; worst row vs LRU in points")
    for n in names:
        if any(v is None for v in ratio[n].values()):
            print(f"{n}: did not finish every row")
            continue
        over, worst, points = summary(ratio[n], lru, list(lru))
        zipf = statistics.mean(ratio[n][k] for k in FEASIBLE)
        print(f"{n}: feasible Zipf mean {zipf:.3f}, over 0.85x {over}/8, worst vs LRU {points:+.1f} points"
              f" ({worst[0]} at {int(worst[1] * 100)}%)", flush=True)


def seeds(count, names, kinds):
    jobs = []
    for kind in kinds:
        first, make = es.KINDS[kind]
        for k in range(count):
            seed = first + 1000 * k
            trace = make(seed)
            requests = requests_of(trace)
            distinct = sum(dict(trace).values())
            jobs += [((kind, b, seed), int(distinct * b), requests) for b in eb.BUDGETS]
    lru = {key: replay(lcs.LRU, capacity, requests) for key, capacity, requests in jobs}
    ratio = {}
    for n in names:
        got = guarded(n, [(capacity, requests) for _, capacity, requests in jobs])
        if any(v is None for v in got):
            print(f"{n}: did not finish every row")
            names = [m for m in names if m != n]
            continue
        ratio[n] = {key: v / lru[key] for (key, _, _), v in zip(jobs, got)}
    for n in names:
        keys = list(lru)
        over, worst, points = summary(ratio[n], lru, keys)
        feasible = sum(1 for k in keys if k[:2] in FEASIBLE)
        per_row = {(kind, b): statistics.mean(ratio[n][(kind, b, es.KINDS[kind][0] + 1000 * k)] for k in range(count))
                   for kind in kinds for b in eb.BUDGETS}
        print(f"{n}: {count} seeds; feasible Zipf mean {statistics.mean(per_row[k] for k in FEASIBLE):.3f},"
              f" row-seeds over 0.85x {over}/{feasible}, rows whose mean is over 0.85x"
              f" {sum(1 for k in FEASIBLE if per_row[k] > 0.85)}/8; worst vs LRU {points:+.1f} points"
              f" ({worst[0]} at {int(worst[1] * 100)}%, seed {worst[2]})")
        print("  mean per row: " + ", ".join(f"{k}@{int(b * 100)}% {v:.3f}" for (k, b), v in per_row.items()),
              flush=True)


def shifting(names):
    print("shifting Zipf (popularity moves every quarter), byte miss ratio / LRU's")
    w = width(names)
    print(f"{'alpha':<6}{'budget':>7}{'lru':>8}" + "".join(f"{n:>{w}}" for n in names))
    for alpha in (0.8, 1.0, 1.2):
        trace = es.shifting(alpha, 77)
        requests = requests_of(trace)
        distinct = sum(dict(trace).values())
        for b in eb.BUDGETS:
            capacity = int(distinct * b)
            base = replay(lcs.LRU, capacity, requests)
            print(f"{alpha:<6}{int(b * 100):>6}%{base:>8.4f}"
                  + "".join(fmt(None if v is None else v / base, w)
                            for v in (guarded(n, [(capacity, requests)])[0] for n in names)), flush=True)


def main():
    args = sys.argv[1:] or ["breadth"]
    mode, names = args[0], args[1:]
    if mode == "list":
        print(" ".join(ORDERS))
    elif mode == "breadth":
        breadth(names or [n for n in ORDERS if n != "lru"])
    elif mode == "seeds":
        count, kinds = 20, ZIPF
        if names and names[0][0].isdigit() or names and names[0].startswith("all:"):
            arg = names.pop(0)
            if arg.startswith("all:"):
                arg, kinds = arg[4:], tuple(es.KINDS)
            count = int(arg)
        seeds(count, names, kinds)
    elif mode == "shifting":
        shifting(names)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
