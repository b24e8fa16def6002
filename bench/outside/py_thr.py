# SPDX-License-Identifier: MIT (bench/outside: one of the sweep's programs)
import threading, hashlib
res = [None] * 4
def work(k):
    d = {i: str(i * k) * 5 for i in range(250000)}
    h = hashlib.sha1()
    for i in range(0, 250000, 5):
        h.update(d[i].encode())
    res[k] = h.hexdigest()
ts = [threading.Thread(target=work, args=(k,)) for k in range(4)]
[t.start() for t in ts]; [t.join() for t in ts]
print(res)
