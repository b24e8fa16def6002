#!/usr/bin/env bash
# Cold-page choice, FIFO against LRU in one run (docs/BENCHMARKS.md,
# "Cold pages"). Two workloads under `uswap run --memory 4M`:
#   hotcold: rt_lru hotcold 4 2 (a hot quarter of the budget touched
#     before each chunk of a cold set 3x the budget, two sweeps; ops = the
#     page touches of both)
#   skew: rt_lru skew 16 100000 (16 MiB, 9 in 10 touches in the first
#     2 MiB, 1 in 10 anywhere)
# Each run alternates the policy order; per policy and workload the
# median, min and max over RUNS of: faults per 1000 ops (uffd page faults
# the supervisor served), pages swapped in per 1000 ops, CPU seconds of the
# whole run (supervisor, its device threads and the program: user + sys)
# and wall seconds.
# usage: bench_lru.sh USWAP RT_LRU [RUNS]
set -uo pipefail
uswap=$1 prog=$2 runs=${3:-5}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
uptime
for ((r = 0; r < runs; r++)); do
	if ((r % 2)); then order="lru fifo"; else order="fifo lru"; fi
	for pol in $order; do
		for w in hotcold skew; do
			if [ $w = hotcold ]; then args="hotcold 4 2" ops=$((2 * 12 * 2 * 256)); else args="skew 16 100000" ops=100000; fi
			TIMEFORMAT="%R %U %S"
			{ time "$uswap" run --memory 4M --evict $pol --json "$dir/j" -- "$prog" $args \
				>/dev/null 2>&1 || { echo "FAIL: $pol $w"; exit 1; } ; } 2>"$dir/t"
			read -r wall usr sys <"$dir/t"
			python3 -c '
import json, sys
j = json.load(open(sys.argv[1])); ops = int(sys.argv[4])
print(sys.argv[2], sys.argv[3], 1000.0 * j["faults"] / ops, 1000.0 * j["swapin_pages"] / ops,
      float(sys.argv[5]), j["refaults_per_eviction"], float(sys.argv[6]) + float(sys.argv[7]))' \
				"$dir/j" $pol $w $ops $wall $usr $sys >>"$dir/rows"
		done
	done
done
uptime
python3 - "$dir/rows" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
def col(pol, w, i):
    return [float(r[i]) for r in rows if r[0] == pol and r[1] == w]
def fmt(v):
    return "%.1f [%.1f-%.1f]" % (statistics.median(v), min(v), max(v))
print("| workload | policy | faults / 1000 ops | swap-in pages / 1000 ops | refaults / eviction | CPU s (user+sys) | wall s |")
print("|---|---|---|---|---|---|---|")
for w in ("hotcold", "skew"):
    for pol in ("fifo", "lru"):
        print("| %s | %s | %s | %s | %.3f | %s | %s |" % (w, pol, fmt(col(pol, w, 2)), fmt(col(pol, w, 3)),
              statistics.median(col(pol, w, 5)), fmt(col(pol, w, 6)), fmt(col(pol, w, 4))))
    f, l = statistics.median(col("fifo", w, 2)), statistics.median(col("lru", w, 2))
    fc, lc = statistics.median(col("fifo", w, 6)), statistics.median(col("lru", w, 6))
    print("| %s | fifo / lru | %.2fx | | | %.2fx | |" % (w, f / l if l else float("inf"), fc / lc))
PY
