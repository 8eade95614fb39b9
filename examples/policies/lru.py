"""LRU as a Python policy: evicts the least recently used page. Equals the built-in `lru`
miss for miss (tests/python/test_pypolicy.py)."""
from collections import OrderedDict

import ssdcache


class LRU(ssdcache.Policy):
    def __init__(self, capacity):
        super().__init__(capacity)
        self.pages = OrderedDict()  # least recently used first

    def on_hit(self, key):
        self.pages.move_to_end(key)

    def on_miss(self, key):
        self.pages[key] = None

    def evict(self):
        return self.pages.popitem(last=False)[0]

    def on_remove(self, key):
        del self.pages[key]


if __name__ == "__main__":
    ssdcache.register_policy("pylru", LRU)
    print(ssdcache.simulate("zipf(alpha=0.9,keys=10k,requests=100k)", "pylru", cache="4MiB").hit_ratio)
