#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The main job (`make run`): a real program under `uswap run` on the
# embedded default (compressed memory, the swap table), with its live
# counters read by `uswap stat` while it runs and the totals at its end;
# then the design comparison (the bgsave workload through both designs).
# The program is our test program (rt_prog bench: 48 MB in a 16 MiB
# budget), or redis-server when the tests were not built.
# usage: bench/run_main.sh BUILD_DIR
set -uo pipefail
build=${1:-build}
uswap=$build/uswap prog=$build/tests/runtime/rt_prog

live() {	# PID: a few live counters, every 0.5 s while PID runs
	local pid=$1
	while kill -0 "$pid" 2>/dev/null; do
		printf "live: "
		"$uswap" stat "$pid" 2>/dev/null |
			awk '/^(resident_pages|faults|swapins|prefetched|evicted|fault_p50_us_below|fault_p99_us_below) / { printf "%s %s  ", $1, $2 }
			     END { if (NR) printf "\n" }'
		sleep 0.5
	done
}

echo "== 1. A real program under uswap run: 48 MB of memory in a 16 MiB budget =="
if [ -x "$prog" ]; then
	# The start-up check's detail lines (indented) are left out.
	"$uswap" run --memory 16M --stats -- "$prog" bench 48 2> >(grep --line-buffered -v '^  ' >&2) &
	sup=$!
	pid=
	for _ in $(seq 100); do
		pid=$(pgrep -x rt_prog -P $sup | head -1)
		[ -n "$pid" ] && break
		sleep 0.02
	done
	[ -n "$pid" ] && live "$pid"
	wait $sup
elif command -v redis-server >/dev/null && command -v redis-benchmark >/dev/null; then
	port=$((22000 + $$ % 20000))
	"$uswap" run --memory 8M --stats -- redis-server --port $port --bind 127.0.0.1 \
		--save "" --appendonly no >/dev/null 2> >(grep --line-buffered -v '^  ' >&2) &
	sup=$!
	for _ in $(seq 300); do redis-cli -p $port ping >/dev/null 2>&1 && break; sleep 0.01; done
	pid=$(redis-cli -p $port info server | awk -F: '/^process_id/ { print $2 + 0 }')
	live "$pid" &
	redis-benchmark -p $port -r 30000 -n 60000 -d 1024 -c 12 -P 32 -t set,get -q
	redis-cli -p $port shutdown nosave >/dev/null 2>&1
	wait $sup
else
	echo "(skipped: neither the test program (build with tests) nor redis-server is there)"
fi
echo
echo "== 2. The designs side by side: the bgsave workload, swap table against swap_map =="
exec "$uswap" bench --workload bgsave --design both --memory 64M
