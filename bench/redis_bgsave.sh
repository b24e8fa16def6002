#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# One redis-server under `uswap run --memory LIMIT_MB`, in the seeds' shape:
# redis-benchmark's own SET pass over -r KEYS (1 KiB values), a GET pass
# (-r KEYS -n KEYS -c 12 -P 32), then BGSAVE and the same GET pass during
# it. Prints both GET rates, the BGSAVE + GET time and uswap run's counters.
# usage: bench/redis_bgsave.sh [BUILD_DIR] [LIMIT_MB] [KEYS] [-- uswap run options]
#   defaults: build 15 30000 (the kernel_compare.sh round's sizes)
set -euo pipefail
build=${1:-build} limit=${2:-15} keys=${3:-30000}
shift $(( $# < 3 ? $# : 3 ))
[ "${1:-}" = -- ] && shift
for b in redis-server redis-benchmark redis-cli; do
	command -v $b >/dev/null || { echo "redis_bgsave.sh: $b is not installed" >&2; exit 1; }
done
port=$((20000 + $$ % 20000)) dir=$(mktemp -d) pid=""
cleanup() {
	[ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	rm -rf "$dir"
}
trap cleanup EXIT
"$build/uswap" run --memory "${limit}M" --swap zram:4G:lz4 --json "$dir/json" "$@" -- \
	redis-server --port $port --bind 127.0.0.1 --save "" --appendonly no --dir "$dir" \
	>/dev/null 2>"$dir/err" &
pid=$!
for _ in $(seq 500); do redis-cli -p $port ping >/dev/null 2>&1 && break; sleep 0.01; done
redis-cli -p $port ping >/dev/null || { cat "$dir/err" >&2; exit 1; }
get() {
	timeout 120 redis-benchmark -p $port -r "$keys" -n "$keys" -d 1024 -c 12 -P 32 -t get --csv \
		2>/dev/null | tail -1 | cut -d, -f2 | tr -d '"'
}
timeout 120 redis-benchmark -p $port -r "$keys" -n $((keys * 2)) -d 1024 -c 12 -P 32 -t set -q >/dev/null
plain=$(get)
t0=$(date +%s%N)
redis-cli -p $port bgsave >/dev/null
during=$(get)
for _ in $(seq 6000); do
	redis-cli -p $port info persistence | grep -q "rdb_bgsave_in_progress:0" && break
	sleep 0.01
done
t1=$(date +%s%N)
redis-cli -p $port shutdown nosave >/dev/null 2>&1 || true
wait "$pid" || true
pid=""
echo "GET/s $plain, during BGSAVE $during; BGSAVE + GET $(((t1 - t0) / 1000000)) ms"
python3 - "$dir/json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
k = ["faults", "swapins", "prefetched", "evicted", "evict_batches", "deferred", "wait_budget",
     "wait_evicting", "wait_copy", "fork_events", "fork_owned", "copier_runs", "copier_rescues",
     "colo_binds", "colo_wakes", "peak_resident_pages", "budget_pages"]
print(" ".join("%s %s" % (x, j.get(x)) for x in k))
PY
