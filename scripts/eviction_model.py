"""S3-FIFO as the store implements it (assetd.toml(5), `order`), in Python, for
scripts/eviction_bench.py: libCacheSim's rules, plus the store's rule for an object as large
as the small queue, which libCacheSim never keeps (`large_rule=False` gives libCacheSim's).

With the rule, such an object is kept in the main queue when its key is in the ghost record;
otherwise it is not kept and its key is remembered. (The store also keeps one read since its
put; in a replay that enforces after every request a new object has not been read yet.)
"""

from collections import OrderedDict


class S3FIFO:
    def __init__(self, capacity, large_rule=True):
        self.capacity = capacity
        self.small_cap = int(capacity * 0.1)
        self.main_cap = capacity - self.small_cap
        self.ghost_cap = int(capacity * 0.9)
        self.large_rule = large_rule
        self.small, self.main, self.ghost = OrderedDict(), OrderedDict(), OrderedDict()
        self.freq, self.size = {}, {}
        self.small_bytes = self.main_bytes = self.ghost_bytes = 0
        self.has_evicted = False

    def _remember(self, key, size):
        if key in self.ghost:
            return
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
                if self.freq[key] >= 2:  # accessed twice: promoted
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
