"""S3-FIFO whose main queue is MQ, for scripts/eviction_alternatives.py (not in libCacheSim).

S3-FIFO (scripts/eviction_model.py, the store's rules) is the better order at a 1% budget and
MQ at 5% and 10% (docs/EVICTION.md): this keeps S3-FIFO's small queue, ghost record and rule
for large objects and replaces its main queue by MQ's: queues by log2 of the accesses, the
least recently placed object of the lowest queue evicted first, an object not accessed for
`lifetime` requests moved one queue down, and a history of the keys evicted from the main
queue with their access counts (first in first out, `history` times the capacity in bytes)
that a key brings back when it is requested again.
"""

from collections import OrderedDict

import eviction_model

QUEUES = 8


class S3MQ(eviction_model.S3FIFO):
    def __init__(self, capacity, lifetime=1000, history=4.0, **kw):
        # Measured (docs/EVICTION.md) with S3-FIFO's sizes of the time, libCacheSim's.
        for k, v in (("small_ratio", 0.1), ("ghost_ratio", 0.9), ("cap_keys", False)):
            kw.setdefault(k, v)
        super().__init__(capacity, **kw)
        self.lifetime, self.now = lifetime, 0
        self.queues = [OrderedDict() for _ in range(QUEUES)]  # key -> expiry, oldest first
        self.count, self.level = {}, {}
        self.history, self.history_bytes, self.history_cap = OrderedDict(), 0, int(capacity * history)

    @staticmethod
    def _queue(count):
        return min(max(count, 1).bit_length() - 1, QUEUES - 1)

    def _place(self, key, count):
        self.count[key] = count
        q = self.level[key] = self._queue(count)
        self.queues[q][key] = self.now + self.lifetime

    def _unplace(self, key):
        del self.queues[self.level.pop(key)][key]

    def _tick(self):
        self.now += 1
        for q in range(1, QUEUES):
            if self.queues[q]:
                key, expiry = next(iter(self.queues[q].items()))
                if expiry < self.now:
                    del self.queues[q][key]
                    self.level[key] = q - 1
                    self.queues[q - 1][key] = self.now + self.lifetime

    def _evict(self):
        self.has_evicted = True
        small = not (self.main_bytes > self.main_cap or self.small_bytes <= 0)
        while True:
            if small and self.small:
                key = next(iter(self.small))
                del self.small[key]
                size = self.size[key]
                self.small_bytes -= size
                if self.freq[key] >= self.threshold:
                    self.main_bytes += size
                    self._place(key, self.freq[key] + 1)  # its put and its reads
                    continue
                del self.freq[key], self.size[key]
                self._remember(key, size)
                return
            if not self.main_bytes:
                small = True
                continue
            queue = next(q for q in self.queues if q)
            key = next(iter(queue))
            self._unplace(key)
            size = self.size.pop(key)
            self.main_bytes -= size
            del self.freq[key]
            self.history.pop(key, None)
            self.history[key] = (self.count.pop(key), size)
            self.history_bytes += size
            while self.history_bytes > self.history_cap:
                self.history_bytes -= self.history.popitem(last=False)[1][1]
            return

    def get(self, key, size):
        self._tick()
        if key in self.level:  # in the main queue
            self._unplace(key)
            self._place(key, self.count[key] + 1)
            return True
        if key in self.freq:
            self.freq[key] = min(self.freq[key] + 1, 3)
            return True
        remembered = self.history.get(key)
        if remembered is not None and size <= self.capacity:
            # MQ's history: straight to the main queue with the count it left with, plus one.
            self.history_bytes -= self.history.pop(key)[1]
            while self.small_bytes + self.main_bytes + size > self.capacity:
                self._evict()
            self.freq[key], self.size[key] = 0, size
            self.main_bytes += size
            self._place(key, remembered[0] + 1)
            return False
        hit = super().get(key, size)
        if key in self.main:  # S3-FIFO placed it in its main queue: MQ's instead
            del self.main[key]
            self._place(key, 1)
        return hit
