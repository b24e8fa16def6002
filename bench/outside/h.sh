#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# h.sh NAME MEM DESIGN SWAP TIMEOUT -- CMD...   (MEM "native" = native run)
# Prints one line: NAME MEM DESIGN SWAP rc out-ok? peak_pages budget_pages pss_max_kib time
U=${U:-/work/wt-outside/build/uswap}
name=$1 mem=$2 design=$3 swap=$4 to=$5; shift 6
d=/tmp/sweep/r/$name; mkdir -p $d
if [ "$mem" = native ]; then
	t0=$(date +%s.%N)
	( cd $d && timeout -s KILL $to /usr/bin/time -f "%M" -o $d/native.maxrss "$@" >$d/native.out 2>$d/native.err ); rc=$?
	t1=$(date +%s.%N)
	echo $rc > $d/native.rc
	printf "%-14s %-7s %-7s %-18s rc=%-3s maxrss=%sK time=%.2fs\n" $name native - - $rc "$(tail -1 $d/native.maxrss)" $(echo "$t1 - $t0" | bc)
	exit 0
fi
tag=$mem-$design-$(echo $swap | tr ':/' '__')
rm -f /tmp/sw.img
case $swap in file:*) f=${swap#file:}; truncate -s 1G $f && mkswap $f >/dev/null 2>&1; chmod 600 $f;; esac
sargs=(); [ "$swap" != default ] && sargs=(--swap $swap)
t0=$(date +%s.%N)
( cd $d && exec timeout -s KILL $to $U run --memory $mem --design $design "${sargs[@]}" --json $d/$tag.json -- "$@" >$d/$tag.out 2>$d/$tag.err ) &
w=$!
sleep 0.05
sup=$(pgrep -P $w | head -1)
python3 /tmp/sweep/sampler.py ${sup:-$w} $d/$tag.pss &
sp=$!
wait $w; rc=$?
t1=$(date +%s.%N)
wait $sp
nrc=$(cat $d/native.rc)
same=SAME; cmp -s $d/native.out $d/$tag.out || same=DIFF
[ "$rc" = "$nrc" ] || same="$same/RC($nrc)"
res=$(python3 - $d/$tag.json <<'PY' 2>/dev/null
import json,sys
j=json.load(open(sys.argv[1]))
dev=sum(x["inuse_pages"] for x in j.get("devices",[]))
print(j.get("peak_resident_pages"), j.get("budget_pages", "?"), "dev=%d" % dev, "ob=%s" % j.get("over_budget"), "sess=%s" % j.get("sessions", "?"))
PY
)
printf "%-14s %-7s %-7s %-18s rc=%-3s %-10s peak/budget=%s pss=%sK time=%.2fs\n" $name $mem $design $swap $rc $same "${res:-NOJSON}" "$(cut -d' ' -f1 $d/$tag.pss)" $(echo "$t1 - $t0" | bc)
grep -v '^  ' $d/$tag.err | grep -i uswap | head -5
