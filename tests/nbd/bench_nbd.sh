#!/usr/bin/env bash
# The NBD benchmark of docs/BENCHMARKS.md: uswap bench --workload swapio on
# a local file and on nbdkit's memory plugin over a Unix socket, without
# and with --filter=delay (1 ms per read and write: nbdkit 1.32's delay
# filter counts whole milliseconds, a value under 1 ms is taken as 0), in
# rounds so that the configurations see the same machine; prints each
# figure's median, min and max over the rounds. Devices of 32 MiB: the
# page set is 3/4 of that, 6144 pages.
#   bash tests/nbd/bench_nbd.sh BUILD/uswap [ROUNDS]
set -u
USWAP=$1
ROUNDS=${2:-3}
d=$(mktemp -d /tmp/uswap-nbd-bench-XXXXXX)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	rm -rf "$d"
}
trap cleanup EXIT

start() {	# NAME ARGS..
	local name=$1; shift
	nbdkit -f --exit-with-parent -U "$d/$name.sock" -P "$d/$name.pid" "$@" 2>"$d/$name.log" &
	pids+=($!)
	while [ ! -e "$d/$name.pid" ]; do
		kill -0 "${pids[-1]}" 2>/dev/null || { cat "$d/$name.log"; exit 1; }
		sleep 0.01
	done
	"$USWAP" mkswap "nbd+unix:///?socket=$d/$name.sock" >/dev/null || exit 1
}
start plain memory 32M
start d1 --filter=delay memory 32M rdelay=1ms wdelay=1ms
names=(file nbd nbd+delay1ms)
specs=("file:$d/swapfile" "nbd+unix:///?socket=$d/plain.sock" "nbd+unix:///?socket=$d/d1.sock")

for r in $(seq 1 "$ROUNDS"); do
	for i in "${!specs[@]}"; do
		"$USWAP" bench --workload swapio --swap "${specs[$i]}" --size 32M --runs 1 \
			2>/dev/null | awk -v n="${names[$i]}" '
			/swap-out \(alloc/ { o0 = $(NF-1); o4 = $NF }
			/swap-in \(fault/ { i0 = $(NF-1); i4 = $NF }
			/readahead/ { for (k = 1; k <= NF; k++) { if ($k == "added,") ra = $(k-1); if ($k == "hit") hit = $(k-1) } }
			/nbd: read p50/ { p50 = $4; p99 = $7; for (k = 1; k <= NF; k++) { if ($k == "max") mx = $(k+1); if ($k == "mean") mean = $(k+1) } }
			END { printf "%s %s %s %s %s %s %s %s %s %s %s\n", n, o0, o4, i0, i4,
				p50 == "" ? "-" : p50, p99 == "" ? "-" : p99, ra, hit,
				mx == "" ? "-" : mx, mean == "" ? "-" : mean }'
	done
done > "$d/all"

echo "swapio, pages/s (median [min..max] of $ROUNDS rounds); latency in us"
printf "%-16s %-22s %-22s %-22s %-22s %-8s %-8s %-10s %-8s\n" device "out order0" "out order4" \
	"in order0" "in order4" "rd p50" "rd p99" "ra hit%" "inflight"
for n in "${names[@]}"; do
	awk -v n="$n" '$1 == n' "$d/all" | python3 -c '
import sys, statistics
rows = [l.split() for l in sys.stdin]
def col(i, fmt="%.0f"):
    v = [float(r[i]) for r in rows if r[i] != "-"]
    if not v: return "-"
    return (fmt % statistics.median(v)) + " [" + (fmt % min(v)) + ".." + (fmt % max(v)) + "]"
def med(i):
    v = [float(r[i]) for r in rows if r[i] != "-"]
    return "%.0f" % statistics.median(v) if v else "-"
ra = [100.0 * float(r[8]) / float(r[7]) for r in rows if float(r[7]) > 0]
print("%-16s %-22s %-22s %-22s %-22s %-8s %-8s %-10s %-8s" % (rows[0][0], col(1), col(2), col(3), col(4),
      med(5), med(6), ("%.0f" % statistics.median(ra)) if ra else "-",
      (rows[0][9] + "/" + rows[0][10]) if rows[0][9] != "-" else "-"))
'
done
