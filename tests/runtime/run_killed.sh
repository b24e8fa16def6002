#!/usr/bin/env bash
# The supervisor is killed mid-run: the program must die with the
# watchdog's message, not hang and not read zeros (rt_prog loop checks
# every page it reads and exits 1 on a wrong one). Before that, uswap stat
# reads the live counters.
# usage: run_killed.sh USWAP RT_PROG
set -uo pipefail
uswap=$1 prog=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

"$uswap" run --memory 4M -- "$prog" loop 16 >"$dir/out" 2>"$dir/err" &
sup=$!
for _ in $(seq 1000); do
	grep -q filled "$dir/out" && break
	sleep 0.01
done
pid=$(pgrep -P $sup -x rt_prog | head -1)
[ -n "$pid" ] || { echo "FAIL: the program did not start"; cat "$dir/err"; exit 1; }
sleep 0.3		# swapping in and out at random now
# uswap stat on the live program, on the way.
"$uswap" stat --json "$pid" >"$dir/stat" || { echo "FAIL: uswap stat"; kill -9 $sup; exit 1; }
python3 - "$dir/stat" "$pid" <<'PY' || { kill -9 $sup; exit 1; }
import json, sys
j = json.load(open(sys.argv[1]))
p = [x for x in j["processes"] if x["pid"] == int(sys.argv[2])]
if not p or j["evicted"] < 1 or j["swapins"] < 1 or p[0]["swapped_pages"] < 1:
    print("FAIL: uswap stat:", j); sys.exit(1)
print("uswap stat: evicted %d, swap-ins %d, pid %s swapped %d" %
      (j["evicted"], j["swapins"], sys.argv[2], p[0]["swapped_pages"]))
PY
kill -9 $sup
for _ in $(seq 500); do
	kill -0 "$pid" 2>/dev/null || break
	sleep 0.01
done
cat "$dir/out"; grep -v '^  ' "$dir/err"
if kill -0 "$pid" 2>/dev/null; then
	echo "FAIL: the program still runs 5 s after its supervisor died"
	kill -9 "$pid"
	exit 1
fi
grep -q "wrong data" "$dir/out" && { echo "FAIL: the program read wrong data"; exit 1; }
grep -q "the supervisor (uswap run, pid $sup) died: killing pid $pid" "$dir/err" ||
	{ echo "FAIL: no message"; exit 1; }
echo "ok: the program died with the message"
