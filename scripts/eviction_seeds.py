#!/usr/bin/env python3
"""S3-FIFO's parameters against LRU over many seeds of scripts/eviction_bench.py's traces.

Usage: eviction_seeds.py [SEEDS] SMALL,GHOST,THRESHOLD[,cap] ...
       eviction_seeds.py shifting | lfu

Run with the eviction bench's virtual environment (.build-bench/eviction-venv/bin/python).
Each SMALL,GHOST,THRESHOLD is libCacheSim's small_size_ratio, ghost_size_ratio and
move_to_main_threshold, given to scripts/eviction_model.py (with the store's rule for large
objects); ",cap" adds the model's cap_keys. SEEDS (default 20) traces of each kind: the bench's
own seed and SEEDS - 1 others.

For each setting it prints, over all seeds, the mean of the byte miss ratio over LRU's on the
Zipf 0.8-1.2 rows, how many of those rows miss 0.85x LRU (Zipf 0.8 at 1% left out: no online
order reaches it), the worst row against LRU in points, the change on the Zipf rows against
the first setting (mean and its standard error, share of rows better), the bench seed's two
rows Zipf 0.8 and 1.2 at 5%, and the mean, lowest and highest ratio of every row.

"shifting" replays Zipf traces whose popularity moves to other objects every quarter through
LRU, S3-FIFO at libCacheSim's sizes and at 5%, 50% with keys capped, and an LFU that keeps the
count of every key it has seen (not in libCacheSim; a yardstick of what the bench's fixed
popularity rewards). "lfu" replays the bench's own traces through that LFU.
"""

import random

import statistics
import sys

import libcachesim as lcs

import eviction_bench as eb
import eviction_model

BUDGETS = eb.BUDGETS
KINDS = {  # the bench's seed per trace, and the generator given another seed
    "zipf-0.6": (6, lambda s: eb.zipf(0.6, s)),
    "zipf-0.8": (8, lambda s: eb.zipf(0.8, s)),
    "zipf-1.0": (10, lambda s: eb.zipf(1.0, s)),
    "zipf-1.2": (12, lambda s: eb.zipf(1.2, s)),
    "zipf-0.9+scans": (9, lambda s: eb.zipf(0.9, s, scans=True)),
    "one-hit": (21, eb.one_hit),
    "videos": (30, eb.videos),
}
GOAL_ROWS = [(n, b) for n in ("zipf-0.8", "zipf-1.0", "zipf-1.2") for b in BUDGETS]


def byte_miss(cache_get, trace):
    missed = total = 0
    for i, s in trace:
        total += s
        if not cache_get(i, s):
            missed += s
    return missed / total


def rows(seeds, kinds=tuple(KINDS), start=0):
    """(name, budget, seed) -> (trace, capacity, LRU's byte miss ratio), for the seeds
    `first + 1000 * k` with k from `start`."""
    out = {}
    for name in kinds:
        first, make = KINDS[name]
        for k in range(start, start + seeds):
            seed = first + 1000 * k
            trace = make(seed)
            distinct = dict(trace)
            for b in BUDGETS:
                capacity = int(sum(distinct.values()) * b)
                lru = lcs.LRU(capacity)
                ratio = byte_miss(lambda i, s: lru.get(lcs.Request(obj_size=s, obj_id=i + 1)), trace)
                out[(name, b, seed)] = (trace, capacity, ratio)
    return out


class HistoryLFU:
    def __init__(self, capacity):
        self.capacity, self.used, self.now = capacity, 0, 0
        self.count, self.last, self.held = {}, {}, {}

    def get(self, key, size):
        self.now += 1
        self.count[key] = self.count.get(key, 0) + 1
        self.last[key] = self.now
        if key in self.held:
            return True
        if size <= self.capacity:
            self.held[key] = size
            self.used += size
        while self.used > self.capacity:  # the least counted goes, the new object too if it is
            victim = min(self.held, key=lambda k: (self.count[k], self.last[k]))
            self.used -= self.held.pop(victim)
        return False


def shifting(alpha, seed, phases=4):
    rng = random.Random(seed)
    size = eb.sizes(rng, eb.OBJECTS)
    weights = [1 / (i + 1) ** alpha for i in range(eb.OBJECTS)]
    trace = []
    for _ in range(phases):
        ranks = list(range(eb.OBJECTS))
        rng.shuffle(ranks)
        trace += [(ranks[i], size[ranks[i]]) for i in rng.choices(range(eb.OBJECTS), weights=weights,
                                                                   k=eb.REQUESTS // phases)]
    return trace


def shifting_table():
    print("shifting Zipf, budget: LRU; S3-FIFO at libCacheSim's sizes, at 5%/50% capped, LFU with all counts / LRU")
    for alpha in (0.8, 1.0, 1.2):
        trace = shifting(alpha, 77)
        capacity_of = sum(dict(trace).values())
        for b in BUDGETS:
            capacity = int(capacity_of * b)
            lru = lcs.LRU(capacity)
            base = byte_miss(lambda i, s: lru.get(lcs.Request(obj_size=s, obj_id=i + 1)), trace)
            now = eviction_model.S3FIFO(capacity, small_ratio=0.1, ghost_ratio=0.9, cap_keys=False)
            ratios = [byte_miss(c.get, trace) / base
                      for c in (now, eviction_model.S3FIFO(capacity, small_ratio=0.05, ghost_ratio=0.5, cap_keys=True),
                                HistoryLFU(capacity))]
            print(f"{alpha} {int(b * 100)}% {base:.4f} " + " ".join(f"{r:.3f}" for r in ratios), flush=True)


def main():
    args = sys.argv[1:]
    if args == ["shifting"]:
        shifting_table()
        return
    if args == ["lfu"]:
        for (name, b, seed), (trace, capacity, lru) in rows(1).items():
            print(f"{name} {int(b * 100)}% {byte_miss(HistoryLFU(capacity).get, trace) / lru:.3f}", flush=True)
        return
    seeds = int(args.pop(0)) if args and "," not in args[0] else 20
    table = rows(seeds)
    first = None
    for arg in args:
        small, ghost, threshold, *cap = arg.split(",")
        ratio = {}
        for key, (trace, capacity, lru) in table.items():
            cache = eviction_model.S3FIFO(capacity, small_ratio=float(small), ghost_ratio=float(ghost),
                                          threshold=int(threshold), cap_keys=cap == ["cap"])
            ratio[key] = byte_miss(cache.get, trace) / lru
        goal = [k for k in ratio if k[:2] in GOAL_ROWS]
        misses = sum(1 for k in goal if k[:2] != ("zipf-0.8", 0.01) and ratio[k] > 0.85)
        worst = max(ratio, key=lambda k: ratio[k] * table[k][2] - table[k][2])
        worst_points = (ratio[worst] - 1) * table[worst][2] * 100
        line = (f"{arg}: Zipf 0.8-1.2 mean {statistics.mean(ratio[k] for k in goal):.4f}, over 0.85x"
                f" {misses}/{len(goal) - seeds}; worst vs LRU {worst_points:+.1f} points ({worst[0]} at"
                f" {int(worst[1] * 100)}%, seed {worst[2]})")
        if first is None:
            first = ratio
        else:
            diff = [(ratio[k] - first[k]) * 100 for k in goal]
            line += (f"; Zipf rows vs {args[0]}: {statistics.mean(diff):+.2f} +- {statistics.stdev(diff) / len(diff) ** 0.5:.2f}"
                     f" % of LRU's missed bytes, better on {sum(1 for d in diff if d < 0) / len(diff):.0%}")
        bench = " ".join(f"{n} 5% {ratio[(n, 0.05, KINDS[n][0])]:.3f}" for n in ("zipf-0.8", "zipf-1.2"))
        print(line + f"; bench seed: {bench}")
        print("  mean (lowest-highest) per row: " + ", ".join(
            f"{n}@{int(b * 100)}% {statistics.mean(r):.3f} ({min(r):.3f}-{max(r):.3f})"
            for n in KINDS for b in BUDGETS
            for r in [[ratio[(n, b, KINDS[n][0] + 1000 * k)] for k in range(seeds)]]), flush=True)


if __name__ == "__main__":
    main()
