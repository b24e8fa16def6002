#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# redis.sh MEM DESIGN SWAP|native : deterministic dataset, GET load + BGSAVE, BGREWRITEAOF,
# check-rdb/aof, DEBUG DIGEST, dbsize. Prints a result line.
mem=$1 design=$2 swap=$3
U=/work/wt-outside/build/uswap
d=$(mktemp -d /tmp/sweep/redis.XXXX); port=$((21000 + RANDOM % 20000))
keys=${KEYS:-60000}
pre=()
if [ "$mem" != native ]; then
	rm -f /tmp/swr.img; sargs=()
	case $swap in file:*) f=${swap#file:}; truncate -s 1G $f; chmod 600 $f; mkswap $f >/dev/null 2>&1; sargs=(--swap $swap);; esac
	pre=(timeout -s KILL 600 $U run --memory $mem --design $design "${sargs[@]}" --json $d/json --)
fi
t0=$(date +%s.%N)
"${pre[@]}" redis-server --port $port --bind 127.0.0.1 --save "" --appendonly no --enable-debug-command yes --dir $d >$d/out 2>$d/err &
w=$!
for _ in $(seq 500); do redis-cli -p $port ping >/dev/null 2>&1 && break; sleep 0.02; done
python3 -c "
import sys
for i in range($keys):
    v = ('v%d-' % i) * (1 + i % 90); k = 'k%012d' % i
    sys.stdout.write('*3\r\n\$3\r\nSET\r\n\$%d\r\n%s\r\n\$%d\r\n%s\r\n' % (len(k), k, len(v), v))
" | redis-cli -p $port --pipe >/dev/null
redis-cli -p $port bgsave >/dev/null
redis-benchmark -p $port -r $keys -n 60000 -c 4 -P 16 -q GET k__rand_int__ >/dev/null 2>&1 || echo "bench get failed"
for _ in $(seq 3000); do redis-cli -p $port info persistence | grep -q "rdb_bgsave_in_progress:0" && break; sleep 0.02; done
redis-cli -p $port bgrewriteaof >/dev/null
for _ in $(seq 3000); do redis-cli -p $port info persistence | grep -q "aof_rewrite_in_progress:0" && break; sleep 0.02; done
ok_rdb=$(redis-check-rdb $d/dump.rdb >/dev/null 2>&1 && echo rdbok || echo RDBBAD)
aof=$(ls $d/appendonlydir/*.base.* $d/*.aof 2>/dev/null | head -1)
ok_aof=$( [ -n "$aof" ] && redis-check-aof $aof >/dev/null 2>&1 && echo aofok || echo "AOFBAD($aof)")
dig=$(redis-cli -p $port debug digest); n=$(redis-cli -p $port dbsize)
st=$(redis-cli -p $port info persistence | grep -E "rdb_last_bgsave_status|aof_last_bgrewrite_status" | tr -d '\r' | tr '\n' ' ')
pid=$(pgrep -f "redis-server 127.0.0.1:$port" | head -1)
pss=0; [ -n "$pid" ] && pss=$(awk '/Pss_Anon/{print $2}' /proc/$pid/smaps_rollup)
redis-cli -p $port shutdown nosave >/dev/null 2>&1
wait $w; rc=$?
t1=$(date +%s.%N)
res=""; [ -f $d/json ] && res=$(python3 -c "
import json; j=json.load(open('$d/json')); print(j['peak_resident_pages'], j['budget_pages'], 'dev=%d' % sum(x['inuse_pages'] for x in j['devices']), 'forks=%d' % j['forks'])")
printf "redis %-7s %-7s %-16s rc=%s %s %s n=%s digest=%s %s peak/budget=%s pss_end=%sK time=%.1fs\n" $mem $design $swap $rc $ok_rdb $ok_aof $n $dig "$st" "$res" $pss $(echo "$t1 - $t0" | bc)
grep -i "uswap" $d/err | grep -v '^  ' | head -5
rm -rf $d
