#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The sweep of outside programs (docs/BENCHMARKS.md, "Outside programs"):
# lays the programs and scripts out
# in /tmp/sweep (the scripts' fixed work directory), builds op.c, Big.java,
# a generated C file for gcc and a small make project, and points the
# scripts at this tree's build/uswap. Then, from /tmp/sweep:
#   ./sweep.sh list.txt                   # each program natively, then under
#                                         # uswap run at 1/3 (table, zram), 1/3
#                                         # (legacy, file) and 1/8 (table, zram)
#                                         # of its native peak RSS
#   ./redis.sh 10M table default          # redis: load, GET + BGSAVE, BGREWRITEAOF
#   KEYS=60000 ./redis.sh native - -      # the same natively
#   python3 table.py                      # the table of the results
#   ./sweep.sh list_tools.txt 2:table:default   # xz, zstd, sort, bc, tcl (tools.sh)
#   ./kernel_run.sh 70 sh progs/tools.sh sort   # the same under kernel swap
# A program's results land in /tmp/sweep/r/NAME/ (output, --json, stderr).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
uswap=$(cd "$here/../.." && pwd)/build/uswap
mkdir -p /tmp/sweep/progs /tmp/sweep/r
cp "$here"/{h.sh,sweep.sh,redis.sh,sampler.py,table.py,list.txt} /tmp/sweep/
sed -i "s|/work/wt-outside/build/uswap|$uswap|" /tmp/sweep/h.sh /tmp/sweep/redis.sh
cp "$here"/{py_dict.py,py_mp.py,py_sub.py,py_thr.py,perl_hash.pl,node_arr.js,node_worker.js} \
   "$here"/{Big.java,sqlite.sql,sortawk.sh,forky.sh,make.sh,gcc.sh,op.c,tools.sh,big.tcl} /tmp/sweep/progs/
cp "$here"/{list_tools.txt,kernel_run.sh} /tmp/sweep/
cd /tmp/sweep/progs
gcc -O2 -pthread -o op op.c
command -v javac >/dev/null && javac -d . Big.java
python3 - <<'PY'
with open('/tmp/sweep/progs/gen.c', 'w') as f:
    for i in range(6000):
        f.write("static int f%d(int x){int a[%d];for(int i=0;i<%d;i++)a[i]=x*i+%d;int s=0;"
                "for(int i=0;i<%d;i++)s+=a[i]^(s<<1);return s;}\n" % (i, i%17+3, i%17+3, i, i%17+3))
    f.write("int main(void){long s=0;\n")
    for i in range(6000):
        f.write("s+=f%d(%d);\n" % (i, i))
    f.write('__builtin_printf("%ld\\n",s);return 0;}\n')
PY
# tools.sh's input: 52 MiB of base64 text, the same each time (a fixed seed)
[ -s data.txt ] || python3 -c '
import base64, random
r = random.Random(13)
with open("data.txt", "wb") as f:
    for _ in range(40):
        f.write(base64.encodebytes(r.randbytes(1 << 20)))'
mkdir -p mk
for i in $(seq 1 12); do
	printf '#include <stdio.h>\nint g%d(int x){int s=0;for(int i=0;i<x;i++)s+=i*%d;return s;}\n' $i $i >mk/m$i.c
done
printf 'int main(void){return 0;}\n' >mk/main.c
printf 'OBJS=$(patsubst %%.c,%%.o,$(wildcard *.c))\nprog: $(OBJS)\n\tgcc -o $@ $^\n%%.o: %%.c\n\tgcc -O2 -c -o $@ $<\nclean:\n\trm -f *.o prog\n' >mk/Makefile
echo "ready: cd /tmp/sweep && ./sweep.sh list.txt"
