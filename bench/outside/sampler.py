#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# The sampler of bench/outside (setup.sh): the tree's Pss_Anon peak.
# sampler.py ROOTPID OUTFILE: every 20 ms, sum Pss_Anon over ROOTPID's
# descendants (not ROOTPID itself: the supervisor); write the max (KiB).
import os, sys, time
root = int(sys.argv[1]); out = sys.argv[2]
mx = 0; n = 0
def children():
    par = {}
    for d in os.listdir('/proc'):
        if not d.isdigit(): continue
        try:
            s = open('/proc/%s/stat' % d).read()
            ppid = int(s[s.rindex(')') + 2:].split()[1])
            par[int(d)] = ppid
        except Exception: pass
    res = []
    for p in par:
        q = p; seen = 0
        while q in par and seen < 64:
            q = par[q]; seen += 1
            if q == root: res.append(p); break
    return res
while os.path.exists('/proc/%d' % root):
    tot = 0
    for p in children():
        try:
            for l in open('/proc/%d/smaps_rollup' % p):
                if l.startswith('Pss_Anon:'): tot += int(l.split()[1])
        except Exception: pass
    mx = max(mx, tot); n += 1
    time.sleep(0.02)
open(out, 'w').write('%d %d\n' % (mx, n))
