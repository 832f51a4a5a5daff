#!/usr/bin/env python3
"""The eviction part of scripts/bench.sh: byte miss ratios of the store's eviction orders
against libCacheSim's reference implementations on the same traces and capacities.

Usage: eviction_bench.py ASSETBENCH SCRATCH

Traces (fixed seeds, sizes lognormal within 1 KiB..1 MiB): Zipf alpha 0.6, 0.8, 1.0, 1.2; Zipf
0.9 with a one-pass scan of new keys every 4,000 requests; a trace where most keys are
requested once; and "videos", Zipf 0.9 over 200 objects of 1-4 MiB, each larger than
S3-FIFO's small queue at every budget. Budgets: 1%, 5% and 10% of the bytes of all distinct
objects. The store replays each trace through Store.enforce after every request (assetbench
eviction); libCacheSim gets the same requests at the same byte capacity. For S3-FIFO the
reference is scripts/eviction_model.py, libCacheSim's rules plus the store's rule for large
objects, itself checked against libCacheSim's S3-FIFO with that rule off. EVICTION_REQUESTS and
EVICTION_OBJECTS set the trace length (default 20,000 requests over 2,000 objects);
EVICTION_COST_ONLY=1 runs only the cost part, which prints objects evicted per second of wall
time and of CPU time (steadier on a shared machine), each the median of EVICTION_COST_ROUNDS
(default 3) rounds with the orders rotated.

The 0.85x goal on the Zipf 0.8-1.2 rows is judged on the mean over EVICTION_SEEDS (default 20)
other seeds of each of those traces, replayed through the model, on the rows where an order
that does not know the future can reach it: one seed's ratio moves by more than the goal's
margin (docs/EVICTION.md). The seeds are held out: not those scripts/eviction_seeds.py chose
the store's setting on. On those rows the store must replay the bench's own seed within 1 point
of the model, so that the model's mean speaks for the store; the bench seed's own ratios are
printed beside it.
"""

import os
import random
import statistics
import subprocess
import sys

import libcachesim as lcs

import eviction_model

REQUESTS = int(os.environ.get("EVICTION_REQUESTS", "20000"))
OBJECTS = int(os.environ.get("EVICTION_OBJECTS", "2000"))
BUDGETS = (0.01, 0.05, 0.10)
ORDERS = ("lru", "s3fifo", "sieve")
# libCacheSim's S3-FIFO at the store's sizes (assetd.toml(5), `order`; its defaults are 10%, 90%).
REFERENCE = {"lru": lcs.LRU, "s3fifo": lambda c: lcs.S3FIFO(c, small_size_ratio=0.05, ghost_size_ratio=0.5),
             "sieve": lcs.Sieve}
# The order assetd.toml(5) makes the default.
DEFAULT = "s3fifo"


def sizes(rng, n):
    return [int(min(1 << 20, max(1024, rng.lognormvariate(10.5, 1.2)))) for _ in range(n)]


def zipf(alpha, seed, scans=False):
    rng = random.Random(seed)
    size = sizes(rng, OBJECTS)
    weights = [1 / (i + 1) ** alpha for i in range(OBJECTS)]
    ids = rng.choices(range(OBJECTS), weights=weights, k=REQUESTS)
    trace = [(i, size[i]) for i in ids]
    if scans:
        out, fresh = [], OBJECTS
        for n, r in enumerate(trace):
            out.append(r)
            if n % 4000 == 3999:  # a one-pass scan of 200 keys never seen again
                for _ in range(200):
                    out.append((fresh, int(min(1 << 20, max(1024, rng.lognormvariate(10.5, 1.2))))))
                    fresh += 1
        trace = out
    return trace


def one_hit(seed):
    # Most keys are requested once; a small Zipf core is requested again and again.
    rng = random.Random(seed)
    core = OBJECTS // 10
    size = sizes(rng, core)
    weights = [1 / (i + 1) for i in range(core)]
    trace, fresh = [], core
    for _ in range(REQUESTS):
        if rng.random() < 0.7:
            trace.append((fresh, int(min(1 << 20, max(1024, rng.lognormvariate(10.5, 1.2))))))
            fresh += 1
        else:
            i = rng.choices(range(core), weights=weights)[0]
            trace.append((i, size[i]))
    return trace


def videos(seed):
    # Files larger than a tenth of every budget: S3-FIFO's large-object rule decides them all.
    rng = random.Random(seed)
    count = 200
    size = [rng.randint(1 << 20, 4 << 20) for _ in range(count)]
    weights = [1 / (i + 1) ** 0.9 for i in range(count)]
    return [(i, size[i]) for i in rng.choices(range(count), weights=weights, k=REQUESTS)]


TRACES = [
    ("zipf-0.6", lambda: zipf(0.6, 6)),
    ("zipf-0.8", lambda: zipf(0.8, 8)),
    ("zipf-1.0", lambda: zipf(1.0, 10)),
    ("zipf-1.2", lambda: zipf(1.2, 12)),
    ("zipf-0.9+scans", lambda: zipf(0.9, 9, scans=True)),
    ("one-hit", lambda: one_hit(21)),
    ("videos", lambda: videos(30)),
]


def reference(order, trace, capacity):
    cache = REFERENCE[order](capacity)
    missed = total = 0
    for i, s in trace:
        total += s
        if not cache.get(lcs.Request(obj_size=s, obj_id=i + 1)):
            missed += s
    return missed / total


def model(trace, capacity, large_rule=True):
    cache = eviction_model.S3FIFO(capacity, large_rule)
    missed = total = 0
    for i, s in trace:
        total += s
        if not cache.get(i, s):
            missed += s
    return missed / total


# No online order reaches 0.85x LRU here: the independent-reference bound is 0.873x
# (docs/EVICTION.md, how close any order can come).
BEYOND_ONLINE = {("zipf-0.8", 0.01)}
# The traces the 0.85x goal is judged on.
GOAL_KINDS = ("zipf-0.8", "zipf-1.0", "zipf-1.2")
# The goal's seeds start here: eviction_seeds.py chose the store's setting on k = 0..19.
HELD_OUT = 20


def seed_means(seeds):
    """The default's model over LRU on the Zipf 0.8-1.2 rows: row -> (mean, lowest, highest)."""
    import eviction_seeds
    ratios = {}
    for (name, b, _), (trace, capacity, lru) in eviction_seeds.rows(seeds, GOAL_KINDS, start=HELD_OUT).items():
        ratios.setdefault((name, b), []).append(eviction_seeds.byte_miss(eviction_model.S3FIFO(capacity).get, trace) / lru)
    return {k: (statistics.mean(r), min(r), max(r)) for k, r in ratios.items()}


def store(bench, scratch, order, trace_file, capacity):
    folder = os.path.join(scratch, "eviction-run")
    subprocess.run(["rm", "-rf", folder], check=True)
    out = subprocess.run(
        [bench, "eviction", "--folder", folder, "--trace", trace_file, "--capacity", str(capacity), "--order", order],
        check=True, stdout=subprocess.PIPE, text=True).stdout
    subprocess.run(["rm", "-rf", folder], check=True)
    fields = dict(f.split("=", 1) for f in out.split() if "=" in f)
    return float(fields["ratio"])


def cost(bench, scratch, order, objects):
    folder = os.path.join(scratch, "eviction-cost")
    subprocess.run(["rm", "-rf", folder], check=True)
    out = subprocess.run(
        [bench, "eviction-cost", "--folder", folder, "--objects", str(objects), "--order", order],
        check=True, stdout=subprocess.PIPE, text=True).stdout
    subprocess.run(["rm", "-rf", folder], check=True)
    fields = dict(f.split("=", 1) for f in out.split() if "=" in f)
    return float(fields["per_second"]), float(fields["per_cpu_second"])


def main():
    bench, scratch = sys.argv[1], sys.argv[2]
    os.makedirs(scratch, exist_ok=True)
    print(f"eviction: {REQUESTS} requests over {OBJECTS} objects per trace; byte miss ratio, store (enforce after"
          f" every request) / libCacheSim {lcs.__version__ if hasattr(lcs, '__version__') else ''} at the same capacity")
    print("(s3fifo model: libCacheSim's S3-FIFO rules plus the store's rule for objects as large as its small queue)")
    print(f"{'trace':<16} {'budget':>6} " + " ".join(
        f"{o + ' store':>12} " + (f"{'s3fifo model':>12} " if o == "s3fifo" else "") + f"{o + ' lib':>12}"
        for o in ORDERS))
    met = True
    goals = []
    seed_rows = []  # the bench seed's Zipf rows over 0.85x LRU
    cost_only = os.environ.get("EVICTION_COST_ONLY") == "1"
    for name, make in [] if cost_only else TRACES:
        trace = make()
        trace_file = os.path.join(scratch, "trace.txt")
        with open(trace_file, "w") as f:
            f.write("\n".join(f"{i} {s}" for i, s in trace) + "\n")
        distinct = {}
        for i, s in trace:
            distinct[i] = s
        all_bytes = sum(distinct.values())
        for b in BUDGETS:
            capacity = int(all_bytes * b)
            ours = {o: store(bench, scratch, o, trace_file, capacity) for o in ORDERS}
            lib = {o: reference(o, trace, capacity) for o in ORDERS}
            ref = dict(lib, s3fifo=model(trace, capacity))
            print(f"{name:<16} {int(b * 100):>5}% " + " ".join(
                f"{ours[o]:>12.4f} " + (f"{ref[o]:>12.4f} " if o == "s3fifo" else "") + f"{lib[o]:>12.4f}"
                for o in ORDERS), flush=True)
            for o in ORDERS:
                if o == DEFAULT and name in GOAL_KINDS:
                    continue  # held to 1 point below
                if abs(ours[o] - ref[o]) > 0.02:
                    goals.append(f"MISSED {o} on {name} at {int(b * 100)}%: store {ours[o]:.4f}, reference"
                                 f" {ref[o]:.4f} (more than 2 points apart)")
                    met = False
            plain = model(trace, capacity, large_rule=False)  # libCacheSim's rules, at the store's sizes
            if abs(plain - lib["s3fifo"]) > 0.02:
                goals.append(f"MISSED the model without its large-object rule on {name} at {int(b * 100)}%: {plain:.4f},"
                             f" libCacheSim's S3-FIFO {lib['s3fifo']:.4f} (more than 2 points apart)")
                met = False
            d, lru = ours[DEFAULT], ours["lru"]
            if name in GOAL_KINDS and abs(d - ref[DEFAULT]) > 0.01:
                goals.append(f"MISSED {DEFAULT} on {name} at {int(b * 100)}%: store {d:.4f}, model {ref[DEFAULT]:.4f}"
                             " (more than 1 point apart on a row the goal judges by the model)")
                met = False
            if name in GOAL_KINDS and d > 0.85 * lru:
                seed_rows.append(f"{name} at {int(b * 100)}% {d / lru:.3f}"
                                 + (" (beyond any online order)" if (name, b) in BEYOND_ONLINE else ""))
            if d > lru + 0.02:
                goals.append(f"MISSED {DEFAULT} on {name} at {int(b * 100)}%: {d:.4f}, more than 2 points worse than"
                             f" LRU {lru:.4f}")
                met = False
    if not cost_only:
        seeds = max(1, int(os.environ.get("EVICTION_SEEDS", "20")))
        means = seed_means(seeds)
        print(f"{DEFAULT} (model) / LRU on Zipf 0.8-1.2, mean (lowest-highest) of {seeds} held-out seeds: " + ", ".join(
            f"{n} {int(b * 100)}% {m:.3f} ({lo:.3f}-{hi:.3f})" for (n, b), (m, lo, hi) in sorted(means.items())))
        print("bench seed over 0.85x LRU: " + (", ".join(seed_rows) if seed_rows else "none"))
        for (n, b), (m, _, _) in sorted(means.items()):
            if m > 0.85 and (n, b) not in BEYOND_ONLINE:
                goals.append(f"MISSED {DEFAULT} on {n} at {int(b * 100)}%: the model's mean of {seeds} seeds {m:.3f} > 0.85 x LRU")
                met = False
    objects = int(os.environ.get("EVICTION_COST_OBJECTS", "100000"))
    rounds = int(os.environ.get("EVICTION_COST_ROUNDS", "3"))
    # One enforcement's rate moves by a third between runs of the same binary on a quiet
    # machine; rounds with the orders rotated, and each order's median, steady it.
    runs = {o: [] for o in ORDERS}
    for r in range(rounds):
        for o in ORDERS[r % len(ORDERS):] + ORDERS[:r % len(ORDERS)]:
            runs[o].append(cost(bench, scratch, o, objects))
    both = {o: (statistics.median(x[0] for x in runs[o]), statistics.median(x[1] for x in runs[o])) for o in ORDERS}
    rates = {o: both[o][0] for o in ORDERS}
    print(f"eviction-cost: one enforcement evicting half of {objects} objects, median of {rounds} rounds: "
          + ", ".join(f"{o} {rates[o]:.0f} objects/s" for o in ORDERS)
          + "; per CPU second: " + ", ".join(f"{o} {both[o][1]:.0f}" for o in ORDERS)
          + "; each round: " + ", ".join(f"{o} " + "/".join(f"{x[0]:.0f}" for x in runs[o]) for o in ORDERS))
    if rates[DEFAULT] < 0.9 * rates["lru"]:
        goals.append(f"MISSED cost: {DEFAULT} {rates[DEFAULT]:.0f}/s < 0.9 x LRU {rates['lru']:.0f}/s")
        met = False
    for g in goals:
        print("eviction: " + g)
    if cost_only:
        print("eviction: cost " + ("MET" if met else "MISSED") + f" ({DEFAULT} within 10% of LRU; miss ratios not run)")
        return
    print("eviction: MET (each order within 2 points of its reference; default " + DEFAULT
          + " <= 0.85 x LRU on Zipf 0.8-1.2 where an online order can be, by the model's mean over held-out seeds"
          " and the store within 1 point of the model; never 2 points worse than LRU on any row; cost within 10%"
          " of LRU)" if met
          else "eviction: MISSED (see above)")


if __name__ == "__main__":
    main()
