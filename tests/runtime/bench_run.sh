#!/usr/bin/env bash
# A benchmark, not a test: rt_prog bench (fill, one sequential read pass,
# random page reads) on MB of memory, without uswap, under uswap run with
# a budget larger than the program (the cost of serving faults), and with a
# budget a third of its size on both slot designs; RUNS rounds interleaved,
# medians with min and max.
# usage: bench_run.sh USWAP RT_PROG [MB] [RUNS]
set -euo pipefail
uswap=$1 prog=$2 mb=${3:-64} runs=${4:-3}
third=$((mb / 3))
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
configs=("plain" "run-nobudget" "run-third-table" "run-third-legacy")
for r in $(seq "$runs"); do
	for c in "${configs[@]}"; do
		case $c in
		plain) "$prog" bench "$mb" ;;
		run-nobudget) "$uswap" run --memory $((mb * 4))M -- "$prog" bench "$mb" 2>/dev/null ;;
		run-third-table) "$uswap" run --memory ${third}M --design table -- "$prog" bench "$mb" 2>/dev/null ;;
		run-third-legacy) "$uswap" run --memory ${third}M --design legacy -- "$prog" bench "$mb" 2>/dev/null ;;
		esac >>"$dir/$c"
	done
done
python3 - "$dir" "$mb" "${configs[@]}" <<'PY'
import sys, statistics
d, mb, configs = sys.argv[1], sys.argv[2], sys.argv[3:]
keys = ["fill_MBps", "seq_read_MBps", "rand_p50_us", "rand_p99_us"]
print("rt_prog bench %s MB; median (min-max) of %s" % (mb, "runs"))
print("%-18s" % "config" + "".join("%-26s" % k for k in keys))
for c in configs:
    rows = [dict(zip(l.split()[0::2], map(float, l.split()[1::2]))) for l in open(d + "/" + c)]
    assert all(r["wrong"] == 0 for r in rows)
    cells = []
    for k in keys:
        v = [r[k] for r in rows]
        cells.append("%.1f (%.1f-%.1f)" % (statistics.median(v), min(v), max(v)))
    print("%-18s" % c + "".join("%-26s" % x for x in cells))
PY
