"""S3-FIFO as the store implements it (assetd.toml(5), `order`), in Python, for
scripts/eviction_bench.py: libCacheSim's rules, plus the store's rule for an object as large
as the small queue, which libCacheSim never keeps (`large_rule=False` gives libCacheSim's).

With the rule, such an object is kept in the main queue when its key is in the ghost record;
otherwise it is not kept and its key is remembered. (The store also keeps one read since its
put; in a replay that enforces after every request a new object has not been read yet.)

`small_ratio`, `ghost_ratio` and `threshold` are libCacheSim's `small_size_ratio`,
`ghost_size_ratio` and `move_to_main_threshold` (libCacheSim's defaults are 0.1, 0.9 and 2);
`cap_keys` counts a key as at most the small queue's bytes in the ghost record: only a large
object's key is larger, so it changes nothing without the rule. The defaults are the store's
(5%, 50%, 2, keys capped), chosen by scripts/eviction_seeds.py over many seeds
(docs/EVICTION.md).
"""

from collections import OrderedDict


class S3FIFO:
    def __init__(self, capacity, large_rule=True, small_ratio=0.05, ghost_ratio=0.5, threshold=2, cap_keys=True):
        self.capacity = capacity
        self.small_cap = int(capacity * small_ratio)
        self.main_cap = capacity - self.small_cap
        self.ghost_cap = int(capacity * ghost_ratio)
        self.threshold = threshold
        self.large_rule = large_rule
        self.cap_keys = cap_keys
        self.small, self.main, self.ghost = OrderedDict(), OrderedDict(), OrderedDict()
        self.freq, self.size = {}, {}
        self.small_bytes = self.main_bytes = self.ghost_bytes = 0
        self.has_evicted = False

    def _remember(self, key, size):
        if key in self.ghost:
            return
        if self.cap_keys:  # only a large object's key is larger: it no longer crowds out the rest
            size = min(size, self.small_cap)
        self.ghost[key] = size
        self.ghost_bytes += size
        while self.ghost_bytes > self.ghost_cap:
            self.ghost_bytes -= self.ghost.popitem(last=False)[1]

    def _evict(self):
        self.has_evicted = True
        small = not (self.main_bytes > self.main_cap or self.small_bytes <= 0)
        while True:
            if small:
                if not self.small:
                    small = False
                    continue
                key = next(iter(self.small))
                del self.small[key]
                size = self.size[key]
                self.small_bytes -= size
                if self.freq[key] >= self.threshold:  # accessed `threshold` times: promoted
                    self.main[key] = None
                    self.main_bytes += size
                    self.freq[key] = 0
                    continue
                del self.freq[key], self.size[key]
                self._remember(key, size)
                return
            if not self.main:
                small = True
                continue
            key = next(iter(self.main))
            del self.main[key]
            if self.freq[key] >= 1:  # one more pass per access
                self.main[key] = None
                self.freq[key] = min(self.freq[key], 3) - 1
                continue
            self.main_bytes -= self.size[key]
            del self.freq[key], self.size[key]
            return

    def get(self, key, size):
        """True on a hit; on a miss, admits the object as the store's run would."""
        if key in self.freq:
            self.freq[key] = min(self.freq[key] + 1, 3)
            return True
        large = size >= self.small_cap
        if large and not (self.large_rule and key in self.ghost):
            if self.large_rule:
                self._remember(key, size)
            return False
        if size > self.capacity:
            return False
        while self.small_bytes + self.main_bytes + size > self.capacity:
            self._evict()
        if key in self.ghost:
            self.ghost_bytes -= self.ghost.pop(key)
            to_main = True
        else:
            to_main = not self.has_evicted and self.small_bytes >= self.small_cap
        self.freq[key], self.size[key] = 0, size
        if to_main:
            self.main[key] = None
            self.main_bytes += size
        else:
            self.small[key] = None
            self.small_bytes += size
        return False
