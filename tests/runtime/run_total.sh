#!/usr/bin/env bash
# --memory-total bounds resident pages plus the compressed store together
# (docs/RUNTIME.md, "The resident + compressed bound"). rt_lru total fills
# 16 MiB of pages that compress about 7x and reads random ones for 2 s under
# --memory 64M (no bound by itself: the data would stay resident) and
# --memory-total 8M, on zram. Sampled as fast as `uswap stat` answers: the program's
# anonymous memory (smaps_rollup) plus the store's bytes (`uswap stat
# --json`: compressed_bytes). Required: 0 wrong words; every sample within
# 8 MiB + 3 MiB of overhead (the fault slack of 1 MiB that --memory has
# too, the batch in flight, the shim's stacks and staging area, libc's
# memory); the supervisor's own peak of resident + compressed pages within
# the bound + the 256-page fault slack + one batch and the headroom; the
# store was used (compressed bytes > 0 in some sample).
# usage: run_total.sh USWAP RT_LRU
set -uo pipefail
uswap=$1 prog=$2
total_mb=8 overhead_mb=3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$uswap" run --memory 64M --memory-total ${total_mb}M --json "$dir/json" \
	-- "$prog" total 16 2 >"$dir/out" 2>"$dir/err" &
sup=$!
pid=
for _ in $(seq 1000); do
	[[ $(<"$dir/out") =~ pid\ ([0-9]+) ]] && pid=${BASH_REMATCH[1]} && break
	sleep 0.01
done
max=0 maxc=0 samples=0
# From the start of the fill until the program exits.
while [ -n "$pid" ] && [ -r /proc/$pid/smaps_rollup ]; do
	a=0
	while read -r k v _; do
		[ "$k" = Anonymous: ] && a=$v
	done </proc/$pid/smaps_rollup 2>/dev/null
	j=$("$uswap" stat --json $pid 2>/dev/null) || continue
	[[ $j =~ \"compressed_bytes\":([0-9]+) ]] || continue
	c=$((BASH_REMATCH[1] / 1024))
	((a + c > max)) && max=$((a + c))
	((c > maxc)) && maxc=$c
	samples=$((samples + 1))
done
wait $sup
rc=$?
cat "$dir/out"
grep -v '^  ' "$dir/err"
fail=0
[ $rc -eq 0 ] || { echo "FAIL: uswap run exited $rc"; fail=1; }
grep -q "^total: wrong 0$" "$dir/out" || { echo "FAIL: wrong data"; fail=1; }
limit=$(( (total_mb + overhead_mb) * 1024 ))
echo "resident + compressed: max $max KiB in $samples samples (store max $maxc KiB), limit $limit KiB"
((samples >= 5)) || { echo "FAIL: only $samples samples"; fail=1; }
((max <= limit)) || { echo "FAIL: over the bound"; fail=1; }
((maxc > 0)) || { echo "FAIL: the compressed store was never used"; fail=1; }
python3 - "$dir/json" $((total_mb * 256)) <<'PY' || fail=1
import json, sys
j, bound = json.load(open(sys.argv[1])), int(sys.argv[2])
peak = j["peak_resident_plus_compressed_pages"]
print("supervisor: peak resident + compressed %d pages, bound %d (+ 352), evicted %d"
      % (peak, bound, j["evicted"]))
if j["memory_total_pages"] != bound or peak > bound + 256 + 64 + 32 or j["evicted"] < 1000:
    print("FAIL:", j); sys.exit(1)
PY
exit $fail
