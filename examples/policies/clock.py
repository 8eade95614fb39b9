"""CLOCK (second chance) as a Python policy, with libCacheSim's n-bit counter: a hit adds
one to the page's counter (up to 2^bits - 1); the hand passes over pages with a non-zero
counter, taking one off each, and evicts the first page at zero. Equals the built-in
`clock` miss for miss (tests/python/test_pypolicy.py)."""
from collections import OrderedDict

import ssdcache


class Clock(ssdcache.Policy):
    def __init__(self, capacity, bits=1):
        super().__init__(capacity)
        self.most = (1 << bits) - 1
        self.ring = OrderedDict()  # key -> counter, from the hand (oldest) to the newest
        self.incoming = None

    def on_hit(self, key):
        self.ring[key] = min(self.ring[key] + 1, self.most)

    def on_miss(self, key):
        if len(self.ring) < self.capacity:
            self.ring[key] = 0
        else:
            self.incoming = key  # enters behind the hand once evict() has made room

    def evict(self):
        while True:
            key, count = self.ring.popitem(last=False)
            if count == 0:
                break
            self.ring[key] = count - 1  # a second chance: behind the hand
        self.ring[self.incoming] = 0
        return key

    def on_remove(self, key):
        del self.ring[key]


if __name__ == "__main__":
    ssdcache.register_policy("pyclock", Clock)
    print(ssdcache.simulate("zipf(alpha=0.9,keys=10k,requests=100k)", "pyclock(bits=2)", cache="4MiB").hit_ratio)
