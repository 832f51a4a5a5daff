"""W-TinyLFU as Caffeine runs it, weighted by bytes, for scripts/eviction_alternatives.py.

libCacheSim's W-TinyLFU never admits an object larger than its window (1% of the capacity
by default), which decides most of a byte-weighted trace; this one admits any object that
fits the capacity, so the policy itself is what is measured. Caffeine's rules (its
BoundedLocalCache and FrequencySketch): a window LRU (WINDOW of the capacity) in front of a
segmented LRU, probation and protected (80% of the main part); a frequency sketch of 4-bit
counters, here kept exactly per key (a sketch as wide as Caffeine's collides rarely), counted
on every request and halved after SAMPLE times as many requests as the cache holds objects;
objects leaving the window are candidates for the main part: while the cache is over its
capacity, the candidate is admitted, and probation's least recent object evicted, only if the
candidate is counted more often, else the candidate goes. No doorkeeper (Caffeine has none)
and no adaptive window (Caffeine's hill climber), so WINDOW is fixed.
"""

from collections import OrderedDict


class WTinyLFU:
    def __init__(self, capacity, window=0.01, protected=0.8, sample=10):
        self.capacity = capacity
        self.window_cap = max(1, int(capacity * window))
        self.protected_cap = int((capacity - self.window_cap) * protected)
        self.sample = sample
        self.window, self.probation, self.protected = OrderedDict(), OrderedDict(), OrderedDict()
        self.bytes = {"window": 0, "probation": 0, "protected": 0}
        self.count, self.additions = {}, 0

    def _touch(self, key):
        self.count[key] = min(15, self.count.get(key, 0) + 1)
        self.additions += 1
        held = len(self.window) + len(self.probation) + len(self.protected)
        if self.additions >= self.sample * max(held, 1):
            self.count = {k: c >> 1 for k, c in self.count.items() if c > 1}
            self.additions //= 2

    def _move(self, key, size, src, dst):
        del getattr(self, src)[key]
        self.bytes[src] -= size
        getattr(self, dst)[key] = size
        self.bytes[dst] += size

    def _total(self):
        return sum(self.bytes.values())

    def _drop(self, key, where):
        self.bytes[where] -= getattr(self, where).pop(key)

    def get(self, key, size):
        self._touch(key)
        if key in self.window:
            self.window.move_to_end(key)
            return True
        if key in self.protected:
            self.protected.move_to_end(key)
            return True
        if key in self.probation:
            self._move(key, size, "probation", "protected")
            while self.bytes["protected"] > self.protected_cap and len(self.protected) > 1:
                old, old_size = next(iter(self.protected.items()))
                self._move(old, old_size, "protected", "probation")
            return True
        if size > self.capacity:
            return False
        self.window[key] = size
        self.bytes["window"] += size
        candidates = []
        while self.bytes["window"] > self.window_cap and len(self.window) > 1:
            old, old_size = next(iter(self.window.items()))
            self._move(old, old_size, "window", "probation")
            candidates.append(old)
        while self._total() > self.capacity:
            candidate = next((c for c in reversed(candidates) if c in self.probation), None)
            victim = next((v for v in self.probation if v != candidate), None)
            if victim is None:
                queue = "protected" if self.protected else "window"
                self._drop(next(iter(getattr(self, queue))), queue)
            elif candidate is None or self.count.get(candidate, 0) <= self.count.get(victim, 0):
                self._drop(candidate if candidate is not None else victim, "probation")
            else:
                self._drop(victim, "probation")
        return False
