#!/usr/bin/env bash
# redis-server (Debian's package) under uswap run with a dataset 3x the
# budget: a SET pass over redis-benchmark's own keys, then BGSAVE during
# a GET load (a fork followed by a fork event: the child
# reads the dataset from its own copy of the parent's swapped pages, swap
# counts 2, docs/RUNTIME.md), then redis-check-rdb accepts the dump,
# sampled keys have their values, the budget held in the parent (sampled
# from smaps_rollup), uswap stat reads the live counters, the BGSAVE child
# was followed (fork_events, fork_swap_dups in --json) and ended, and every
# device is empty at the end.
# usage: run_redis.sh USWAP
set -uo pipefail
uswap=$1
budget_mb=2 keys=6000	# 6,000 values of 1 KiB: 3x the budget
overhead_mb=6		# as run_check.sh; redis's own baseline is counted in the budget
for b in redis-server redis-benchmark redis-cli redis-check-rdb; do
	command -v $b >/dev/null || { echo "FAIL: $b is not installed (Debian package redis-server)"; exit 1; }
done
dir=$(mktemp -d)
port=$((20000 + $$ % 20000))
cleanup() {
	redis-cli -p $port shutdown nosave >/dev/null 2>&1
	rm -rf "$dir"
}
trap cleanup EXIT
"$uswap" run --memory ${budget_mb}M --json "$dir/json" --stats -- \
	redis-server --port $port --bind 127.0.0.1 --save "" --appendonly no --dir "$dir" \
	>"$dir/out" 2>"$dir/err" &
sup=$!
for _ in $(seq 500); do
	redis-cli -p $port ping >/dev/null 2>&1 && break
	sleep 0.01
done
pid=$(pgrep -P $sup -x redis-server | head -1)
[ -n "$pid" ] || { echo "FAIL: redis-server did not start"; cat "$dir/err"; exit 1; }
max=0
sample() {
	local a=0 k v _
	while read -r k v _; do
		[ "$k" = Anonymous: ] && a=$v
	done </proc/$pid/smaps_rollup
	((a > max)) && max=$a
}
fail=0
bench() {	# the seeds' shape, sized to this test
	redis-benchmark -p $port -r $keys -n $keys -d 1024 -c 4 -P 16 -t "$1" -q >/dev/null 2>&1 &
	local b=$!
	while kill -0 $b 2>/dev/null; do sample; sleep 0.01; done
	wait $b || { echo "FAIL: redis-benchmark -t $1"; fail=1; }
}
t0=$(date +%s%N)
bench set
t1=$(date +%s%N)
redis-cli -p $port bgsave >/dev/null
bench get	# during BGSAVE
t2=$(date +%s%N)
"$uswap" stat --json "$pid" >"$dir/stat" || { echo "FAIL: uswap stat on redis"; fail=1; }
python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert j["evicted"] > 0 and j["swapins"] > 0, j' \
	"$dir/stat" || fail=1
for _ in $(seq 1000); do
	redis-cli -p $port info persistence | grep -q "rdb_bgsave_in_progress:0" && break
	sleep 0.01
done
redis-cli -p $port info persistence | grep -q "rdb_last_bgsave_status:ok" || { echo "FAIL: BGSAVE"; fail=1; }
t3=$(date +%s%N)
echo "set $(( (t1 - t0) / 1000000 )) ms, get during BGSAVE $(( (t2 - t1) / 1000000 )) ms, BGSAVE done $(( (t3 - t1) / 1000000 )) ms after it started"
redis-check-rdb "$dir/dump.rdb" >"$dir/check" 2>&1 || { echo "FAIL: redis-check-rdb"; cat "$dir/check"; fail=1; }
n=$(redis-cli -p $port dbsize)
[ "$n" -ge $((keys / 2)) ] || { echo "FAIL: $n keys"; fail=1; }
# Sampled keys: redis-benchmark SETs one payload of 1,024 bytes to every
# key; every sampled value must be that one, whole.
for i in $(seq 0 97 $((keys - 1))); do
	printf 'GET key:%012d\n' $i
done | redis-cli -p $port >"$dir/values"
python3 - "$dir/values" <<'PY' || fail=1
import sys
vals = [l.rstrip("\n") for l in open(sys.argv[1]) if l.strip()]
if len(vals) < 10 or len(set(vals)) != 1 or len(vals[0]) != 1024:
    print("FAIL: sampled values: %d found, %d different, lengths %s" %
          (len(vals), len(set(vals)), sorted(set(map(len, vals)))))
    sys.exit(1)
PY
found=$(grep -c . "$dir/values")
redis-cli -p $port shutdown nosave >/dev/null 2>&1
wait $sup
rc=$?
grep -v '^  ' "$dir/err"
[ $rc -eq 0 ] || { echo "FAIL: uswap run exited $rc"; fail=1; }
python3 - "$dir/json" <<'PY' || fail=1
import json, sys
j = json.load(open(sys.argv[1]))
bad = [d for d in j["devices"] if d["inuse_pages"]]
if bad:
    print("FAIL: devices not empty at the end:", bad); sys.exit(1)
if j["fork_events"] < 1 or j["fork_swapped"] < 100 or j["fork_swap_dups"] < 1 or \
   j["fork_sessions_ended"] < 1:
    print("FAIL: BGSAVE's child was not followed with swapped pages: fork_events %d, "
          "fork_swapped %d, fork_swap_dups %d, ended %d" % (j["fork_events"], j["fork_swapped"],
          j["fork_swap_dups"], j["fork_sessions_ended"])); sys.exit(1)
print("evicted %d, swap-ins %d, forks %d; BGSAVE: %d pages out of redis at fork, %d swap "
      "entries shared with the child (count 2), devices empty" % (j["evicted"], j["swapins"],
      j["forks"], j["fork_swapped"], j["fork_swap_dups"]))
PY
limit=$(( (budget_mb + overhead_mb) * 1024 ))
echo "redis: $n keys, $found sampled keys right; resident anonymous memory of redis (the parent) during the loads and BGSAVE: max $max KiB, limit $limit KiB"
[ "$max" -le "$limit" ] || { echo "FAIL: over the budget"; fail=1; }
exit $fail
