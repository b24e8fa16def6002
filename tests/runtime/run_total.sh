#!/usr/bin/env bash
# --memory-total bounds resident pages plus the compressed store together
# (docs/RUNTIME.md, "The resident + compressed bound"). rt_lru total fills
# 12 MiB of pages that compress about 7x and reads random ones for 1 s under
# --memory 64M (no bound by itself: the data would stay resident) and
# --memory-total 8M, on zram. The program's anonymous memory
# (smaps_rollup) is sampled every ~10 ms; the store's bytes are read live
# with `uswap stat --json` (compressed_bytes) between samples, as often as
# it answers, and its exact peak comes from the supervisor's --json
# (peak_compressed_bytes). Required: 0 wrong words; the sampled anonymous
# peak plus the store's peak (a bound on every sum of the two) within
# 8 MiB + 3 MiB of overhead (the fault slack of 1 MiB that --memory has
# too, the batch in flight, the shim's stacks and staging area, libc's
# memory); the supervisor's own peak of resident + compressed pages within
# the bound + the 256-page fault slack + one batch and the headroom; the
# store was used. (`uswap stat` is slow on a loaded machine: what it saw
# is printed, not required.)
# usage: run_total.sh USWAP RT_LRU
set -uo pipefail
source "$(dirname "$0")/lib.sh"
uswap=$1 prog=$2
total_mb=8 overhead_mb=3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$uswap" run --memory 64M --memory-total ${total_mb}M --json "$dir/json" \
	-- "$prog" total 12 1 >"$dir/out" 2>"$dir/err" &
sup=$!
pid=
for _ in $(seq 1000); do
	[[ $(<"$dir/out") =~ pid\ ([0-9]+) ]] && pid=${BASH_REMATCH[1]} && break
	sleep 0.01
done
max=0 maxc=0 samples=0 stats=0
# From the start of the fill until the program exits; `uswap stat` in the
# background, one at a time (it is slow on a loaded machine).
statpid=
mkfifo "$dir/tick"
exec 3<>"$dir/tick"	# read -t on it: a 10 ms sleep without a process
while [ -n "$pid" ] && [ -r /proc/$pid/smaps_rollup ]; do
	smaps_kib $pid Anonymous:
	((REPLY > max)) && max=$REPLY
	samples=$((samples + 1))
	if [ -z "$statpid" ] || ! kill -0 $statpid 2>/dev/null; then
		if [ -n "$statpid" ]; then
			wait $statpid
			if [[ $(<"$dir/stat") =~ \"compressed_bytes\":([0-9]+) ]]; then
				stats=$((stats + 1))
				c=$((BASH_REMATCH[1] / 1024))
				((c > maxc)) && maxc=$c
			fi
		fi
		"$uswap" stat --json $pid >"$dir/stat" 2>/dev/null &
		statpid=$!
	fi
	read -rt 0.01 -u 3 _
done
if [ -n "$statpid" ] && wait $statpid &&
   [[ $(<"$dir/stat") =~ \"compressed_bytes\":([0-9]+) ]]; then
	stats=$((stats + 1))
	c=$((BASH_REMATCH[1] / 1024))
	((c > maxc)) && maxc=$c
fi
wait $sup
rc=$?
cat "$dir/out"
grep -v '^  ' "$dir/err"
fail=0
[ $rc -eq 0 ] || { echo "FAIL: uswap run exited $rc"; fail=1; }
grep -q "^total: wrong 0$" "$dir/out" || { echo "FAIL: wrong data"; fail=1; }
limit=$(( (total_mb + overhead_mb) * 1024 ))
peakc=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["peak_compressed_bytes"] // 1024)' "$dir/json")
echo "anonymous peak $max KiB in $samples samples + store peak $peakc KiB = $((max + peakc)) KiB, limit $limit KiB; store seen live by $stats uswap stat calls (max $maxc KiB)"
((samples >= 5)) || { echo "FAIL: only $samples samples"; fail=1; }
((max + peakc <= limit)) || { echo "FAIL: over the bound"; fail=1; }
((peakc > 0 && maxc <= peakc)) || { echo "FAIL: store peak $peakc KiB, seen $maxc KiB"; fail=1; }
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
