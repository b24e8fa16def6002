# SPDX-License-Identifier: MIT
import re, sys, glob
rows = {}; native = {}; order = []
for f in sorted(glob.glob('/tmp/sweep/sweep*.log')):
    try: lines = open(f).read().splitlines()
    except Exception: continue
    for l in lines:
        m = re.match(r'(\S+)\s+native\s+-\s+-\s+rc=(\d+)\s+maxrss=(\d+)K time=([\d.]+)s', l)
        if m:
            native[m.group(1)] = (m.group(2), int(m.group(3)), float(m.group(4)))
            if m.group(1) not in order: order.append(m.group(1))
            continue
        m = re.match(r'(\S+)\s+(\d+M)\s+(\S+)\s+(\S+)\s+rc=(\d+)\s+(\S+)\s+peak/budget=(\S+) ?(\S*).*?pss=(\d+)K time=([\d.]+)s', l)
        if m:
            rows[(m.group(1), m.group(2), m.group(3), m.group(4))] = m.groups()
print("| program | native peak RSS | native s | budget | design, device | exit | output | peak / budget pages | tree Pss_Anon max | s under uswap |")
print("|---|---|---|---|---|---|---|---|---|---|")
for name in order:
    n = native.get(name)
    for k, g in rows.items():
        if k[0] != name: continue
        _, mem, design, swap, rc, same, peak, budget, pss, t = g
        dev = 'zram:4G' if swap == 'default' else 'file'
        res = 'same' if same == 'SAME' else 'killed at the timeout' if rc == '137' and n[0] != '137' else same
        pb = '%s / %s' % (peak, budget) if peak != 'NOJSON' else '-'
        print("| %s | %d MiB | %.1f | %s | %s, %s | %s (native %s) | %s | %s | %s | %s |" % (name, n[1] // 1024, n[2], mem, design, dev, rc, n[0], res, pb, ('%d MiB' % (int(pss) // 1024)) if int(pss) else '-', t))
