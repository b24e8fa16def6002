#!/usr/bin/env bash
# The NBD benchmark of docs/BENCHMARKS.md, in rounds so that every
# configuration sees the same machine; prints each figure's median, min
# and max over the rounds.
#
# Part 1, uswap bench --workload swapio (pages/s in and out, NBD latency,
# readahead hits, requests in flight) on:
#   file      a local file
#   nbd       nbdkit's memory plugin on a Unix socket
#   nbd+1ms   the same behind --filter=delay rdelay=1ms wdelay=1ms (nbdkit
#             1.32's delay filter counts whole milliseconds: 0.2ms is 0,
#             50us is refused)
#   py+0us, py+50us, py+200us
#             tests/nbd/delay_memory.py, a RAM disk in nbdkit's python
#             plugin (Debian: nbdkit-plugin-python) that waits delay_us
#             before each read and write; py+0us is its own cost
# Devices of 32 MiB: the page set is 3/4 of that, 6144 pages.
#
# Part 2, the mm workloads usemem and bgsave (--design table, 32 MiB of
# memory, 64 MiB of data) on a local file, on one nbdkit memory export,
# and striped over two at one priority; per-device pages come from the
# bench's "devices" report.
#   bash tests/nbd/bench_nbd.sh BUILD/uswap [ROUNDS]
set -u
USWAP=$1
ROUNDS=${2:-3}
HERE=$(cd "$(dirname "$0")" && pwd)
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
		kill -0 "${pids[-1]}" 2>/dev/null || { cat "$d/$name.log"; return 1; }
		sleep 0.01
	done
	"$USWAP" mkswap "nbd+unix:///?socket=$d/$name.sock" >/dev/null || exit 1
}
start plain memory 32M || exit 1
start d1 --filter=delay memory 32M rdelay=1ms wdelay=1ms || exit 1
names=(file nbd nbd+1ms)
specs=("file:$d/swapfile" "nbd+unix:///?socket=$d/plain.sock" "nbd+unix:///?socket=$d/d1.sock")
for us in 0 50 200; do
	if start "py$us" python "$HERE/delay_memory.py" size=32M delay_us=$us; then
		names+=("py+${us}us")
		specs+=("nbd+unix:///?socket=$d/py$us.sock")
	else
		echo "(no nbdkit python plugin: py+${us}us left out)"
	fi
done
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"

for r in $(seq 1 "$ROUNDS"); do
	for i in "${!specs[@]}"; do
		"$USWAP" bench --workload swapio --swap "${specs[$i]}" --size 32M --runs 1 \
			2>/dev/null | awk -v n="${names[$i]}" '
			/swap-out \(alloc/ { o0 = $(NF-8); o4 = $(NF-5) }
			/swap-in \(fault/ { i0 = $(NF-8); i4 = $(NF-5) }
			/readahead/ { for (k = 1; k <= NF; k++) { if ($k == "added,") ra = $(k-1); if ($k == "hit") hit = $(k-1) } }
			/nbd: read p50/ { p50 = $4; p99 = $7; for (k = 1; k <= NF; k++) { if ($k == "max") mx = $(k+1); if ($k == "mean") mean = $(k+1) } }
			END { printf "%s %s %s %s %s %s %s %s %s %s %s\n", n, o0, o4, i0, i4,
				p50 == "" ? "-" : p50, p99 == "" ? "-" : p99, ra, hit,
				mx == "" ? "-" : mx, mean == "" ? "-" : mean }'
	done
done > "$d/all"

echo "swapio, pages/s (median [min..max] of $ROUNDS rounds); NBD read latency in us (median of rounds)"
printf "%-10s %-22s %-22s %-22s %-22s %-7s %-7s %-8s %-8s\n" device "out order0" "out order4" \
	"in order0" "in order4" "rd p50" "rd p99" "ra hit%" "inflight"
for n in "${names[@]}"; do
	awk -v n="$n" '$1 == n' "$d/all" | python3 -c '
import sys, statistics
rows = [l.split() for l in sys.stdin]
def col(i, fmt="%.0f"):
    v = [float(r[i]) for r in rows if r[i] != "-"]
    if not v: return "-"
    return (fmt % statistics.median(v)) + " [" + (fmt % min(v)) + ".." + (fmt % max(v)) + "]"
def med(i, fmt="%.0f"):
    v = [float(r[i]) for r in rows if r[i] != "-"]
    return fmt % statistics.median(v) if v else "-"
ra = [100.0 * float(r[8]) / float(r[7]) for r in rows if float(r[7]) > 0]
print("%-10s %-22s %-22s %-22s %-22s %-7s %-7s %-8s %-8s" % (rows[0][0], col(1), col(2), col(3), col(4),
      med(5), med(6), ("%.0f" % statistics.median(ra)) if ra else "-",
      (med(9) + "/" + med(10, "%.1f")) if rows[0][9] != "-" else "-"))
'
done
echo "load average after part 1: $(cut -d' ' -f1-3 /proc/loadavg)"

# Part 2: the mm workloads
start m1 memory 128M || exit 1
start m2 memory 128M || exit 1
start m3 memory 128M || exit 1
"$USWAP" mkswap "$d/mmfile" 128M >/dev/null || exit 1
mnames=(file nbd nbd-x2)
mspecs=("--swap file:$d/mmfile" "--swap nbd+unix:///?socket=$d/m1.sock"
	"--swap nbd+unix:///?socket=$d/m2.sock --swap nbd+unix:///?socket=$d/m3.sock")
for r in $(seq 1 "$ROUNDS"); do
	for w in usemem bgsave; do
		for i in "${!mspecs[@]}"; do
			# shellcheck disable=SC2086
			"$USWAP" bench --workload $w --design table --memory 32M --size 64M --json \
				${mspecs[$i]} 2>/dev/null | sed "s/^/$w ${mnames[$i]} /"
		done
	done
done > "$d/mm"
echo "mm workloads, --design table, 32 MiB memory, 64 MiB data (median [min..max] of $ROUNDS rounds)"
python3 - "$d/mm" <<'PY'
import json, statistics, sys
runs = {}
for line in open(sys.argv[1]):
    w, dev, js = line.split(" ", 2)
    runs.setdefault((w, dev), []).append(json.loads(js))
def fmt(v, f="%.0f"):
    return (f % statistics.median(v)) + " [" + (f % min(v)) + ".." + (f % max(v)) + "]"
keys = {"usemem": ["throughput_mb_per_s", "swapouts", "swapins", "elapsed_s"],
        "bgsave": ["parent_ops_per_s", "child_mb_per_s", "swapouts", "swapins", "elapsed_s"]}
for (w, dev), rs in runs.items():
    bad = sum(r["bad_pages"] for r in rs)
    print("%s on %s: bad pages %d" % (w, dev, bad))
    for k in keys[w]:
        print("  %-22s %s" % (k, fmt([r[k] for r in rs], "%.1f" if "per_s" in k or k == "elapsed_s" else "%.0f")))
    ndev = len(rs[0]["devices"])
    for i in range(ndev):
        ds = [r["devices"][i] for r in rs]
        line = "  device %d: pages out %s (share %s), in %s" % (
            i, fmt([x["pages_out"] for x in ds]), fmt([x["pages_out_share"] for x in ds], "%.2f"),
            fmt([x["pages_in"] for x in ds]))
        if "nbd" in ds[0]:
            line += "; read p50/p99 %s/%s us, in flight max %s mean %s" % (
                fmt([x["nbd"]["read_p50_us"] for x in ds]), fmt([x["nbd"]["read_p99_us"] for x in ds]),
                fmt([x["nbd"]["max_inflight"] for x in ds]), fmt([x["nbd"]["avg_inflight"] for x in ds], "%.1f"))
        print(line)
PY
echo "load average after part 2: $(cut -d' ' -f1-3 /proc/loadavg)"
