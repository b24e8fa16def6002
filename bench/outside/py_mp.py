# SPDX-License-Identifier: MIT (bench/outside: one of the sweep's programs)
import multiprocessing as mp, hashlib
big = [("x%d" % i) * 4 for i in range(400000)]   # inherited by the fork
def work(k):
    h = hashlib.md5()
    loc = [i * k for i in range(200000)]
    for s in big[k::7]:
        h.update(s.encode())
    return k, h.hexdigest(), sum(loc) % 999983
if __name__ == "__main__":
    mp.set_start_method("fork")
    with mp.Pool(2) as p:
        for r in p.map(work, range(8)):
            print(*r)
