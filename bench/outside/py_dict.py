# SPDX-License-Identifier: MIT (bench/outside: one of the sweep's programs)
import hashlib
d = {}
for i in range(600000):
    d["k%d" % i] = ("v%d" % (i * 7)) * 3
l = [i * i for i in range(1000000)]
h = hashlib.sha256()
for i in range(0, 600000, 3):
    h.update(d["k%d" % i].encode())
print(len(d), sum(l) % 1000003, h.hexdigest())
